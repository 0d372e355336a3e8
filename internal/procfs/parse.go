package procfs

import (
	"bytes"
	"time"
)

// The parsers below read the kernel's formats byte by byte without
// allocating; each tolerates short or odd input by leaving fields zero.

// parseStat parses task/<tid>/stat (proc(5)). The name sits in parentheses
// and may itself contain ')' and spaces, so fields are counted from the last
// ')'. It returns the name's bytes (valid until the buffer is reused).
func parseStat(b []byte, t *Thread) (comm []byte, ok bool) {
	open := -1
	for i, c := range b {
		if c == '(' {
			open = i
			break
		}
	}
	closing := -1
	for i := len(b) - 1; i > open; i-- {
		if b[i] == ')' {
			closing = i
			break
		}
	}
	if open < 0 || closing < 0 || closing+2 >= len(b) {
		return nil, false
	}
	comm = b[open+1 : closing]
	rest := b[closing+2:]
	// Field 3 (state) is rest's first field.
	field := 3
	i := 0
	for i < len(rest) && field <= 41 {
		j := i
		for j < len(rest) && rest[j] != ' ' && rest[j] != '\n' {
			j++
		}
		f := rest[i:j]
		switch field {
		case 3:
			if len(f) > 0 {
				t.State = f[0]
			}
		case 14:
			t.UserCPU = ticks(atou(f))
		case 15:
			t.SystemCPU = ticks(atou(f))
		case 19:
			t.Nice = atoi(f)
		case 22:
			t.StartTime = atou(f)
		case 39:
			t.Processor = atoi(f)
		case 40:
			t.RTPriority = atoi(f)
		case 41:
			t.Policy = atoi(f)
		}
		field++
		i = j + 1
	}
	return comm, field > 22
}

// parseStatus picks the context-switch counters and the affinity list out
// of task/<tid>/status and returns the list's bytes.
func parseStatus(b []byte, t *Thread) (cpus []byte) {
	for len(b) > 0 {
		end := 0
		for end < len(b) && b[end] != '\n' {
			end++
		}
		line := b[:end]
		if end < len(b) {
			b = b[end+1:]
		} else {
			b = b[end:]
		}
		if len(line) < 10 {
			continue
		}
		switch {
		case hasPrefix(line, "voluntary_ctxt_switches:"):
			t.Voluntary = atou(trim(line[len("voluntary_ctxt_switches:"):]))
		case hasPrefix(line, "nonvoluntary_ctxt_switches:"):
			t.Involuntary = atou(trim(line[len("nonvoluntary_ctxt_switches:"):]))
		case hasPrefix(line, "Cpus_allowed_list:"):
			cpus = trim(line[len("Cpus_allowed_list:"):])
		}
	}
	return cpus
}

// parseStatusThreads returns the Threads line of a process's status, or
// -1 when there is none.
func parseStatusThreads(b []byte) int {
	for line := range bytes.Lines(b) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if hasPrefix(line, "Threads:") {
			v := trim(line[len("Threads:"):])
			if len(v) == 0 || v[0] < '0' || v[0] > '9' {
				return -1
			}
			return atoi(v)
		}
	}
	return -1
}

// parseSchedstat parses "run_ns wait_ns timeslices".
func parseSchedstat(b []byte, t *Thread) {
	var v [3]uint64
	k := 0
	i := 0
	for k < 3 && i < len(b) {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n') {
			i++
		}
		j := i
		for j < len(b) && b[j] != ' ' && b[j] != '\n' {
			j++
		}
		if j > i {
			v[k] = atou(b[i:j])
			k++
		}
		i = j
	}
	t.RunTime = time.Duration(v[0])
	t.RunQueueWait = time.Duration(v[1])
	t.Timeslices = v[2]
}

// parseSyscall parses task/<tid>/syscall: "running", "-1 sp pc" (blocked
// outside a system call) or "nr arg1 ... arg6 sp pc" with hex arguments.
func parseSyscall(b []byte, t *Thread) {
	b = trim(b)
	t.SyscallSP, t.SyscallPC = 0, 0
	switch {
	case len(b) == 0:
		return
	case hasPrefix(b, "running"):
		t.Syscall = SyscallRunning
		return
	case b[0] == '-':
		t.Syscall = SyscallNone
		return
	}
	i := 0
	for i < len(b) && b[i] != ' ' {
		i++
	}
	t.Syscall = atoi(b[:i])
	// "nr arg1 ... arg6 sp pc": the first five arguments, the sixth
	// skipped, then the stack pointer and program counter.
	for k := 0; k < 8 && i < len(b); k++ {
		i++
		j := i
		for j < len(b) && b[j] != ' ' {
			j++
		}
		switch v := hexu(b[i:j]); {
		case k < len(t.SyscallArgs):
			t.SyscallArgs[k] = v
		case k == 6:
			t.SyscallSP = v
		case k == 7:
			t.SyscallPC = v
		}
		i = j
	}
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

func trim(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n' || b[len(b)-1] == '\t' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	return b
}

// atou parses decimal digits, stopping at the first non-digit; overflow
// saturates rather than wrapping, since counters only grow.
func atou(b []byte) uint64 {
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return ^uint64(0)
		}
		n = n*10 + d
	}
	return n
}

func atoi(b []byte) int {
	if len(b) > 0 && b[0] == '-' {
		return -int(atou(b[1:]) & (1<<62 - 1))
	}
	return int(atou(b) & (1<<62 - 1))
}

// hexu parses "0x1f" or "1f".
func hexu(b []byte) uint64 {
	if len(b) >= 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		b = b[2:]
	}
	var n uint64
	for _, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return n
		}
		n = n<<4 | uint64(d)
	}
	return n
}
