package procfs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// A stat line of a real thread (kernel 6.x), with a name that contains the
// characters that break naive splitting.
const statLine = "4242 (evil) name (x) R 1 4242 4242 0 -1 4194560 1500 0 0 0 250 75 0 0 20 -5 9 0 123456 " +
	"1000000 500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 7 2 0 0 0 0 0 0 0 0 0 0 0\n"

func TestParseStat(t *testing.T) {
	var th Thread
	comm, ok := parseStat([]byte(statLine), &th)
	require.True(t, ok)
	assert.Equal(t, "evil) name (x", string(comm))
	assert.Equal(t, byte('R'), th.State)
	assert.Equal(t, 2500*time.Millisecond, th.UserCPU)
	assert.Equal(t, 750*time.Millisecond, th.SystemCPU)
	assert.Equal(t, -5, th.Nice)
	assert.Equal(t, uint64(123456), th.StartTime)
	assert.Equal(t, 1, th.Processor)
	assert.Equal(t, 7, th.RTPriority)
	assert.Equal(t, 2, th.Policy)

	for _, bad := range []string{"", "4242", "4242 (x", "4242 (x) R 1 2", ")(", "1 () "} {
		var th Thread
		_, ok := parseStat([]byte(bad), &th)
		assert.False(t, ok, "%q", bad)
	}
}

func TestParseHostStat(t *testing.T) {
	stat := "cpu  100 0 50 900 0 0 0 0 0 0\ncpu0 50 0 25 450 0 0 0 0 0 0\ncpu1 50 0 25 450 0 0 0 0 0 0\n" +
		"intr 12345 0 1 2\nctxt 987654321\nbtime 1700000000\nprocesses 4242\nprocs_running 3\nprocs_blocked 1\nsoftirq 1 2 3\n"
	assert.Equal(t, &Host{ContextSwitches: 987654321, ProcsRunning: 3, ProcsBlocked: 1, CPUs: 2, BusyTicks: 150}, parseHostStat([]byte(stat)))
	// A short cpu line counts what it has (user, nice, system).
	assert.Equal(t, &Host{BusyTicks: 6}, parseHostStat([]byte("cpu 1 2 3\nctxt\n")))
}

func TestParseLoadAvg(t *testing.T) {
	assert.Equal(t, [3]float64{0.52, 1.5, 12}, parseLoadAvg([]byte("0.52 1.50 12.00 2/467 12345\n")))
	// What the kernel never prints reads 0: a load average is finite and
	// not negative.
	assert.Equal(t, [3]float64{0, 0.25, 0}, parseLoadAvg([]byte("-1 0.25 NaN")))
	assert.Equal(t, [3]float64{0, 0, 0}, parseLoadAvg([]byte("Inf x")))
	assert.Equal(t, [3]float64{}, parseLoadAvg(nil))
}

func TestParseStatusThreads(t *testing.T) {
	assert.Equal(t, 2014, parseStatusThreads([]byte("Name:\tjava\nUmask:\t0022\nThreads:\t2014\nSigQ:\t0/63\n")))
	assert.Equal(t, 1, parseStatusThreads([]byte("Threads:\t1")))
	for _, bad := range []string{"", "Name:\tx\n", "Threads:\n", "Threads:\t-3\n", "XThreads:\t4\n"} {
		assert.Equal(t, -1, parseStatusThreads([]byte(bad)), "%q", bad)
	}
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tworker\nState:\tS (sleeping)\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n" +
		"voluntary_ctxt_switches:\t277\nnonvoluntary_ctxt_switches:\t25\n"
	var th Thread
	cpus := parseStatus([]byte(status), &th)
	assert.Equal(t, "0-1", string(cpus))
	assert.Equal(t, uint64(277), th.Voluntary)
	assert.Equal(t, uint64(25), th.Involuntary)
}

func TestParseSchedstat(t *testing.T) {
	var th Thread
	parseSchedstat([]byte("120883812 8416799 302\n"), &th)
	assert.Equal(t, 120883812*time.Nanosecond, th.RunTime)
	assert.Equal(t, 8416799*time.Nanosecond, th.RunQueueWait)
	assert.Equal(t, uint64(302), th.Timeslices)
}

func TestParseSyscall(t *testing.T) {
	tests := []struct {
		in   string
		nr   int
		args [5]uint64
	}{
		{"202 0x55adb7aca160 0x80 0x2 0x0 0x0 0x0 0x7ffe 0x7f9c\n", 202, [5]uint64{0x55adb7aca160, 0x80, 2}},
		{"running\n", SyscallRunning, [5]uint64{}},
		{"-1 0x7ffe2ad1b0e8 0x7f9c0c0a1d36\n", SyscallNone, [5]uint64{}},
		{"7 0xFF", 7, [5]uint64{0xff}},
	}
	for _, tc := range tests {
		th := Thread{Syscall: SyscallUnknown}
		parseSyscall([]byte(tc.in), &th)
		assert.Equal(t, tc.nr, th.Syscall, tc.in)
		assert.Equal(t, tc.args, th.SyscallArgs, tc.in)
	}
}

func TestParseMaps(t *testing.T) {
	in := "55adb7ac6000-55adb7ac7000 r--p 00000000 fe:01 1234   /tmp/app\n" +
		"55adb7aca000-55adb7acb000 rw-p 00003000 fe:01 1234   /tmp/app\n" +
		"55adb7acb000-55adb7acc000 rw-p 00000000 00:00 0 \n" +
		"55adb8000000-55adb8021000 rw-p 00000000 00:00 0      [heap]\n" +
		"7f0000000000-7f0000001000 r-xp 00000000 fe:01 99     /lib/x86_64-linux-gnu/libc.so.6 (deleted)\n"
	maps, err := parseMaps([]byte(in))
	require.NoError(t, err)
	require.Len(t, maps, 5)
	assert.Equal(t, symbolize.Mapping{Start: 0x55adb7aca000, End: 0x55adb7acb000, Perms: "rw-p", Offset: 0x3000, DevMajor: 0xfe, DevMinor: 1, Inode: 1234, Path: "/tmp/app"}, maps[1])
	assert.Equal(t, "", maps[2].Path)
	assert.False(t, maps[2].FileBacked())
	assert.Equal(t, "[heap]", maps[3].Path)
	assert.False(t, maps[3].FileBacked())
	assert.True(t, maps[4].Deleted())

	_, err = parseMaps([]byte("garbage\n"))
	assert.Error(t, err)
}

func TestScanTCP(t *testing.T) {
	in := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0\n" +
		"   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0 20 4 30 10 -1\n" +
		"   2: short line\n"
	var got []tcpEntry
	require.NoError(t, scanTCP([]byte(in), func(e tcpEntry) { got = append(got, e) }))
	require.Len(t, got, 2)
	assert.Equal(t, 8080, got[0].localPort)
	assert.Equal(t, tcpListen, got[0].state)
	assert.Equal(t, uint64(111), got[0].inode)
	assert.Equal(t, tcpEstablished, got[1].state)
	assert.Equal(t, "0100007F", string(got[1].remoteAddr))
}

func TestCountCPUs(t *testing.T) {
	for in, want := range map[string]int{"0-1": 2, "0": 1, "0-3,8,10-11": 7, "": 0, "3-1": 0, "x,2": 1, "0-1\n": 2} {
		assert.Equal(t, want, CountCPUs(in), in)
	}
}

func TestClassifyFutex(t *testing.T) {
	tests := []struct {
		name    string
		op, val uint64
		loc     symbolize.Location
		want    FutexKind
	}{
		{"glibc contended mutex", futexWait | futexPrivateFlag, 2, symbolize.Location{}, FutexLock},
		{"condition variable", futexWaitBitset | futexPrivateFlag | futexClockRealtime, 0, symbolize.Location{}, FutexCondition},
		{"PI mutex", futexLockPI, 0, symbolize.Location{}, FutexLock},
		{"other FUTEX_WAIT protocol", futexWait | futexPrivateFlag, 0, symbolize.Location{}, FutexUnknown},
		{"pthread_cond_t symbol decides", futexWait, 0, symbolize.Location{Symbol: "cv", SymbolSize: 48, SymbolOffset: 8}, FutexCondition},
		{"pthread_mutex_t symbol decides", futexWait, 1, symbolize.Location{Symbol: "m", SymbolSize: 40}, FutexLock},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, classifyFutex(tc.op, tc.val, tc.loc))
		})
	}
	assert.Equal(t, "FUTEX_WAIT_BITSET_PRIVATE", futexOpName(futexWaitBitset|futexPrivateFlag|futexClockRealtime))
	assert.Equal(t, "FUTEX_OP_5", futexOpName(5))
}

func TestLocationString(t *testing.T) {
	assert.Equal(t, "contended_mutex (app+0x4160)", symbolize.Location{Module: "app", Offset: 0x4160, Symbol: "contended_mutex"}.String())
	assert.Equal(t, "work_ready+0x28 (app+0x4108)", symbolize.Location{Module: "app", Offset: 0x4108, Symbol: "work_ready", SymbolOffset: 0x28}.String())
	assert.Equal(t, "[heap]+0x10", symbolize.Location{Module: "[heap]", Offset: 0x10}.String())
}

// Every parser here reads kernel text that a hostile or future kernel could
// shape differently: none may panic, and what they return stays sane.
func FuzzProcFiles(f *testing.F) {
	f.Add([]byte(statLine))
	f.Add([]byte("0.52 0.58 0.59 1/467 12345\n"))
	f.Add([]byte("Cpus_allowed_list:\t0-1\nvoluntary_ctxt_switches:\t277\n"))
	f.Add([]byte("202 0x55adb7aca160 0x80 0x2 0x0\n"))
	f.Add([]byte("55adb7ac6000-55adb7ac7000 r--p 00000000 fe:01 1234   /tmp/app\n"))
	f.Add([]byte("  sl local\n   0: 0100007F:1F90 00000000:0000 0A 0:0 0:0 0 0 0 111 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var th Thread
		if comm, ok := parseStat(b, &th); ok && len(comm) > len(b) {
			t.Fatalf("name longer than input")
		}
		parseStatus(b, &th)
		parseSchedstat(b, &th)
		_ = parseStatusThreads(b)
		_ = parseHostStat(b)
		for _, l := range parseLoadAvg(b) {
			if !(l >= 0 && l < 1e9) {
				t.Fatalf("load average %v from %q", l, b)
			}
		}
		parseSyscall(b, &th)
		if maps, err := parseMaps(b); err == nil {
			for _, m := range maps {
				if m.End <= m.Start {
					t.Fatalf("empty mapping accepted: %+v", m)
				}
			}
		}
		_ = scanTCP(b, func(tcpEntry) {})
		CountCPUs(string(b))
	})
}
