package futextrace

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real format of sys_enter_futex on Linux 6.18.
const enterFormat = `name: sys_enter_futex
ID: 522
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int __syscall_nr;	offset:8;	size:4;	signed:1;
	field:u32 * uaddr;	offset:16;	size:8;	signed:0;
	field:int op;	offset:24;	size:8;	signed:0;
	field:u32 val;	offset:32;	size:8;	signed:0;
	field:const struct __kernel_timespec * utime;	offset:40;	size:8;	signed:0;
	field:u32 * uaddr2;	offset:48;	size:8;	signed:0;
	field:u32 val3;	offset:56;	size:8;	signed:0;

print fmt: "uaddr: 0x%08lx", ((unsigned long)(REC->uaddr))
`

func TestParseFormat(t *testing.T) {
	fields, err := parseFormat([]byte(enterFormat))
	require.NoError(t, err)
	assert.Equal(t, field{offset: 16, size: 8}, fields["uaddr"])
	assert.Equal(t, field{offset: 24, size: 8}, fields["op"])
	assert.Equal(t, field{offset: 40, size: 8}, fields["utime"])
	assert.Equal(t, field{offset: 4, size: 4, signed: true}, fields["common_pid"])
	_, err = parseFormat([]byte("name: x\nformat:\n"))
	assert.Error(t, err)

	raw := make([]byte, 24)
	binary.LittleEndian.PutUint64(raw[16:], uint64(^uint64(109))) // -110, ETIMEDOUT
	v, ok := field{offset: 16, size: 8, signed: true}.get(raw)
	assert.True(t, ok)
	assert.Equal(t, int64(-etimedout), int64(v))
	binary.LittleEndian.PutUint32(raw[4:], uint32(0xfffffffe))
	v, _ = field{offset: 4, size: 4, signed: true}.get(raw)
	assert.Equal(t, int64(-2), int64(v))
	_, ok = field{offset: 20, size: 8}.get(raw)
	assert.False(t, ok, "past the record's end")
}

func TestFindTracefsErrors(t *testing.T) {
	saved := tracefsDirs
	defer func() { tracefsDirs = saved }()

	tracefsDirs = []string{filepath.Join(t.TempDir(), "none")}
	_, err := findTracefs()
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.ErrorIs(t, err, ErrUnavailable)
	assert.Equal(t, ReasonNoTracefs, e.Reason)
	assert.Contains(t, err.Error(), "mount -t tracefs nodev /sys/kernel/tracing")

	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "events", "sched"), 0o755))
	tracefsDirs = []string{dir}
	_, err = findTracefs()
	require.ErrorAs(t, err, &e)
	assert.Equal(t, ReasonNoTracepoint, e.Reason)
	assert.Contains(t, err.Error(), "CONFIG_FTRACE_SYSCALLS")
}

func TestKernelFilterOps(t *testing.T) {
	f := kernelFilter()
	for _, op := range []int{0, 128, 256, 384, 6, 134, 9, 137, 393, 11, 139, 13, 141} {
		assert.Contains(t, " "+f+" ", " op == "+strconv.Itoa(op)+" ")
		assert.True(t, blocking(uint64(op)))
	}
	for _, op := range []int{1, 129, 7, 135, 10, 4} {
		assert.NotContains(t, " "+f+" ", " op == "+strconv.Itoa(op)+" ")
		assert.False(t, blocking(uint64(op)))
	}
	assert.Equal(t, "FUTEX_WAIT", OpName(128))
	assert.Equal(t, "FUTEX_LOCK_PI2", OpName(13))
}

func TestQuantileAndStackCopy(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	assert.Equal(t, time.Duration(5), Quantile(d, 0.5))
	assert.Equal(t, time.Duration(10), Quantile(d, 0.99))
	assert.Equal(t, time.Duration(1), Quantile(d, 0))
	assert.Equal(t, time.Duration(0), Quantile(nil, 0.5))

	s := &StackCopy{SP: 0x1000, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	b := make([]byte, 4)
	assert.True(t, s.ReadStack(0x1004, b))
	assert.Equal(t, []byte{5, 6, 7, 8}, b)
	assert.False(t, s.ReadStack(0x1005, b), "past the copy's end")
	assert.False(t, s.ReadStack(0xfff, b), "below SP")
	assert.False(t, s.ReadStack(^uint64(0), b))
	assert.False(t, (*StackCopy)(nil).ReadStack(0x1000, b))
}

// sampleRecord builds a PERF_RECORD_SAMPLE as the kernel writes it.
func sampleRecord(id uint64, tid uint32, tm uint64, raw []byte, regs []uint64, stack []byte) []byte {
	var p []byte
	u64 := func(v uint64) { p = binary.LittleEndian.AppendUint64(p, v) }
	u64(id)
	u64(uint64(tid)<<32 | uint64(tid))
	u64(tm)
	n := (len(raw) + 4 + 7) &^ 7
	p = binary.LittleEndian.AppendUint32(p, uint32(n-4))
	p = append(p, raw...)
	p = append(p, make([]byte, n-4-len(raw))...)
	if regs != nil {
		u64(2)
		for _, r := range regs {
			u64(r)
		}
		u64(uint64(len(stack)))
		p = append(p, stack...)
		u64(uint64(len(stack)))
	}
	hdr := make([]byte, 8)
	binary.LittleEndian.PutUint32(hdr, recordSample)
	binary.LittleEndian.PutUint16(hdr[6:], uint16(8+len(p)))
	return append(hdr, p...)
}

func TestParseRecord(t *testing.T) {
	raw := make([]byte, 64)
	binary.LittleEndian.PutUint64(raw[16:], 0xdead0)
	r, ok := parseRecord(sampleRecord(7, 42, 1000, raw, nil, nil), 9, 3)
	require.True(t, ok)
	assert.Equal(t, uint64(7), r.id)
	assert.Equal(t, uint32(42), r.tid)
	assert.Equal(t, uint64(1000), r.time)
	assert.Len(t, r.raw, 68) // the kernel pads the raw data to 8 bytes with its size
	stack := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	r, ok = parseRecord(sampleRecord(9, 42, 1000, raw, []uint64{1, 2, 3}, stack), 9, 3)
	require.True(t, ok)
	assert.Equal(t, []uint64{1, 2, 3}, r.regs)
	assert.Equal(t, stack, r.stack)

	lost := make([]byte, 24)
	binary.LittleEndian.PutUint32(lost, recordLost)
	binary.LittleEndian.PutUint16(lost[6:], 24)
	binary.LittleEndian.PutUint64(lost[16:], 5)
	r, ok = parseRecord(lost, 0, 0)
	require.True(t, ok)
	assert.Equal(t, uint64(5), r.lost)

	good := sampleRecord(9, 42, 1000, raw, []uint64{1, 2, 3}, stack)
	for n := range good {
		_, ok := parseRecord(good[:n], 9, 3) // the header's size is past the end
		assert.False(t, ok, "cut at %d", n)
	}
}

func FuzzParseRecord(f *testing.F) {
	raw := make([]byte, 64)
	f.Add(sampleRecord(7, 42, 1000, raw, nil, nil), uint64(9), 3)
	f.Add(sampleRecord(9, 42, 1000, raw, []uint64{1, 2, 3}, make([]byte, 64)), uint64(9), 3)
	f.Add([]byte{2, 0, 0, 0, 0, 0, 24, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}, uint64(0), 0)
	f.Fuzz(func(t *testing.T, b []byte, stackID uint64, nregs int) {
		nregs %= 64
		r, ok := parseRecord(b, stackID, nregs)
		if !ok {
			return
		}
		if r.typ == recordSample && len(r.raw) > len(b) {
			t.Fatalf("raw of %d bytes from a record of %d", len(r.raw), len(b))
		}
		if len(r.stack) > len(b) || len(r.regs)*8 > len(b) {
			t.Fatalf("stack or regs larger than the record")
		}
		// What the tracer reads from a record must not panic either.
		f := formats{uaddr: field{offset: 16, size: 8}, op: field{offset: 24, size: 8}, ret: field{offset: 16, size: 8, signed: true}}
		f.uaddr.get(r.raw)
		f.ret.get(r.raw)
	})
}

// TestOpenUnprivileged runs this test binary as nobody (uid 65534) and
// has it call Open: the error must say what to do, and be ErrUnavailable.
func TestOpenUnprivileged(t *testing.T) {
	if os.Getenv("FUTEXTRACE_UNPRIVILEGED_CHILD") == "1" {
		_, err := Open(os.Getpid(), Options{})
		var e *Error
		if errors.As(err, &e) {
			os.Stdout.WriteString("REASON " + strconv.Itoa(int(e.Reason)) + "\n")
		}
		if errors.Is(err, ErrUnavailable) {
			os.Stdout.WriteString("UNAVAILABLE\n")
		}
		if err != nil {
			os.Stdout.WriteString("ERROR " + err.Error() + "\n")
		}
		return
	}
	requireRoot(t)
	self, err := os.Executable()
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "futextrace-unpriv")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "futextrace.test")
	src, err := os.Open(self)
	require.NoError(t, err)
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	src.Close()
	require.NoError(t, dst.Close())

	cmd := exec.Command(bin, "-test.run", "^TestOpenUnprivileged$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FUTEXTRACE_UNPRIVILEGED_CHILD=1", "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	paranoid, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	require.NoError(t, err)
	assert.Contains(t, string(out), "UNAVAILABLE\n")
	assert.Contains(t, string(out), "REASON "+strconv.Itoa(int(ReasonNoPrivilege))+"\n")
	assert.Contains(t, string(out), "ERROR exact futex waits need root or CAP_PERFMON (perf_event_paranoid is "+strings.TrimSpace(string(paranoid))+")\n")
}

// FuzzRingDrain feeds the ring reader arbitrary ring contents and
// positions: it must read only inside the ring and stop at bad headers.
func FuzzRingDrain(f *testing.F) {
	f.Add([]byte{9, 0, 0, 0, 0, 0, 16, 0, 1, 2, 3, 4, 5, 6, 7, 8}, uint64(0), uint16(16))
	f.Add([]byte{9, 0, 0, 0, 0, 0, 0, 0}, uint64(4090), uint16(8))
	f.Fuzz(func(t *testing.T, data []byte, tail uint64, n uint16) {
		const size = 4096
		mem := make([]byte, pageSize+size)
		r := &ring{mem: mem, data: mem[pageSize:]}
		for i, c := range data {
			r.data[(tail+uint64(i))%size] = c
		}
		tail %= 1 << 40
		binary.LittleEndian.PutUint64(mem[1032:], tail)
		binary.LittleEndian.PutUint64(mem[1024:], tail+uint64(n)%(size+1))
		total := 0
		r.drain(func(rec []byte) {
			total += len(rec)
			parseRecord(rec, 1, 3)
		})
		if total > int(n) {
			t.Fatalf("read %d bytes of %d", total, n)
		}
	})
}
