package sample

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// A JVM thread's native stack ends where it enters code no binary holds
// (JIT-compiled or interpreted Java): beyond it the unwinder guesses, and
// the dump has the Java frames.
func TestNativePartOfAJVMStack(t *testing.T) {
	lib := func(module, fn string) symbolize.StackFrame {
		return symbolize.StackFrame{PC: 1, Module: module, Function: fn}
	}
	jit := symbolize.StackFrame{PC: 2, Module: "anonymous memory", Offset: 0x50}
	for _, tc := range []struct {
		name string
		in   []symbolize.StackFrame
		want []symbolize.StackFrame
	}{
		{"through JIT code", []symbolize.StackFrame{lib("libc.so.6", "__lll_lock_wait"), lib("libjnilocks.so", "Java_JniLocks_globalWork"), jit, lib("libjvm.so", "JavaCalls::call_helper")},
			[]symbolize.StackFrame{lib("libc.so.6", "__lll_lock_wait"), lib("libjnilocks.so", "Java_JniLocks_globalWork")}},
		{"a stripped library's frame stays", []symbolize.StackFrame{lib("libc.so.6", "__lll_lock_wait"), {PC: 3, Module: "libfoo.so.1", Offset: 0x40}},
			[]symbolize.StackFrame{lib("libc.so.6", "__lll_lock_wait"), {PC: 3, Module: "libfoo.so.1", Offset: 0x40}}},
		{"starts in JIT code", []symbolize.StackFrame{jit, lib("libjvm.so", "x")}, nil},
		{"all native", []symbolize.StackFrame{lib("libc.so.6", "a"), lib("libjvm.so", "b")}, []symbolize.StackFrame{lib("libc.so.6", "a"), lib("libjvm.so", "b")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, nativePart(tc.in))
		})
	}
}
