package sample

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// A JVM thread's native stack ends where it enters code no binary holds
// (JIT-compiled or interpreted Java): beyond it the unwinder guesses, and
// the dump has the Java frames. A wait whose site is in the JVM's own
// library is the JVM's (a safepoint a thread dump makes a thread coming
// back from native code wait at): the dump judges it.
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
		{"all native", []symbolize.StackFrame{lib("libc.so.6", "a"), lib("libfoo.so", "b")}, []symbolize.StackFrame{lib("libc.so.6", "a"), lib("libfoo.so", "b")}},
		{"the JVM's safepoint on the way back from native code", []symbolize.StackFrame{lib("libc.so.6", "__futex_abstimed_wait_common"), lib("libc.so.6", "pthread_cond_wait"),
			lib("libjvm.so", "PlatformMonitor::wait"), lib("libjvm.so", "SafepointSynchronize::block"), lib("libjvm.so", "JavaThread::check_special_condition_for_native_trans"), jit}, nil},
		{"a library's wait under a call back into the JVM stays", []symbolize.StackFrame{lib("libc.so.6", "__lll_lock_wait"), lib("libc.so.6", "pthread_mutex_lock"),
			lib("librocksdbjni-linux64.so", "rocksdb::DBImpl::WriteImpl"), lib("libjvm.so", "jni_CallVoidMethod")},
			[]symbolize.StackFrame{lib("libc.so.6", "__lll_lock_wait"), lib("libc.so.6", "pthread_mutex_lock"), lib("librocksdbjni-linux64.so", "rocksdb::DBImpl::WriteImpl"), lib("libjvm.so", "jni_CallVoidMethod")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, nativePart(tc.in, "libjvm.so"))
		})
	}
}
