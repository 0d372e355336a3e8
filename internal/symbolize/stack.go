package symbolize

import (
	"strconv"
)

// StackFrame is one frame of a native thread's user stack. A stack is a
// slice of them, innermost first (the frame the thread is in, then its
// callers).
type StackFrame struct {
	// PC is the frame's program counter: for the innermost frame where
	// the thread is, for the others the return address into them.
	PC uint64
	// Module is the binary's base name ("libc.so.6", "server"), or a
	// description of memory no binary holds ("anonymous memory" for JIT
	// code); "" when no mapping held PC.
	Module string
	// Function is the function's symbol, demangled; "" when no symbol
	// covers PC. Offset is PC's distance from the function's start when
	// Function is set, else from the module's load address (its ELF
	// virtual address), so a name is the same from run to run.
	Function string
	Offset   uint64
	// File and Line are the source position of PC (for a caller, of its
	// call) where the binary or its debug file has a line table; "" and
	// 0 otherwise (FileLine).
	File string
	Line int
}

// Name is the frame's stable name: its function ("pthread_mutex_lock"),
// else its module and offset ("server+0x4d740"), else its address.
func (f StackFrame) Name() string {
	switch {
	case f.Function != "":
		return f.Function
	case f.Module != "":
		return f.Module + "+0x" + strconv.FormatUint(f.Offset, 16)
	}
	return "0x" + strconv.FormatUint(f.PC, 16)
}

// Regs are the registers an unwind starts from. A thread blocked in a
// system call shows only its stack pointer and program counter
// (/proc/<tid>/syscall); a perf sample also has the frame pointer.
type Regs struct {
	PC, SP uint64
	// BP is the frame pointer (rbp) when HaveBP is set; otherwise unknown
	// until a frame's call-frame information says where it was saved.
	BP     uint64
	HaveBP bool
}

// StackMemory reads a process's memory for an unwinder: b filled from
// addr, or false when the bytes cannot be read. /proc/<pid>/mem
// (MemReader) and a copy of the stack a perf sample carries both are one.
type StackMemory interface {
	ReadStack(addr uint64, b []byte) bool
}

// MaxStackFrames bounds the frames an unwind keeps: deeper stacks are cut
// at their outermost end (the innermost frames say where a thread waits).
const MaxStackFrames = 64
