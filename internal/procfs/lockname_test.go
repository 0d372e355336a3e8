package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/symbolize"
	"github.com/ctprof/ctprof/internal/testnative"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// convoyGroups are lock_convoy's thread groups, each queued on a mutex in
// a memory of its own.
var convoyGroups = []string{"glob", "heap", "shm", "stk"}

const convoyPerGroup = 3

// convoySample is one sweep of lock_convoy in which every group had
// waiters: the futex each group waits on, by group, with the sweep's
// threads.
type convoySample struct {
	byGroup map[string]FutexWait
	threads []Thread
	names   map[int]string
}

// sampleConvoy sweeps p until every group of lock_convoy has at least one
// thread queued on its mutex, and reads the holders as the sampler does.
func sampleConvoy(t *testing.T, p *testnative.Process) convoySample {
	t.Helper()
	fs := NewFS("/proc")
	r, err := fs.NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	sym := symbolize.NewSymbolizer(fs.Target(p.PID))
	defer sym.Close()
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	var cs convoySample
	err = testnative.PollUntil(30*time.Second, func() error {
		threads, err := r.Read(nil)
		if err != nil {
			return err
		}
		cs = convoySample{byGroup: map[string]FutexWait{}, threads: threads, names: map[int]string{}}
		for _, th := range threads {
			cs.names[th.TID] = th.Name
		}
		futexes := GroupFutexWaits(threads, sym)
		mem.FillHolders(futexes, threads)
		for _, fw := range futexes {
			g, _, _ := strings.Cut(cs.names[fw.TIDs[0]], "-")
			if fw.Kind == FutexLock {
				cs.byGroup[g] = fw
			}
		}
		for _, g := range convoyGroups {
			if _, ok := cs.byGroup[g]; !ok {
				return fmt.Errorf("no waiter of group %s yet: %+v", g, cs.byGroup)
			}
		}
		// The stack's owner may be running at a sweep, which shows no
		// stack pointer; a later one finds it.
		if m := cs.byGroup["stk"].Location.Module; !strings.HasPrefix(m, "[stack:") {
			return fmt.Errorf("the stack's owner not seen blocked yet: %s", m)
		}
		return nil
	})
	require.NoError(t, err)
	return cs
}

// convoyNames starts lock_convoy (stripped or not), samples it, and
// returns the name of each group's futex with its address.
func convoyNames(t *testing.T, stripped bool) (names map[string]string, addrs map[string]uint64, cs convoySample, pid int) {
	t.Helper()
	p := testnative.StartWith(t, testnative.Options{Stripped: stripped}, "lock_convoy", strconv.Itoa(convoyPerGroup), "20000")
	defer p.Stop()
	cs = sampleConvoy(t, p)
	names, addrs = map[string]string{}, map[string]uint64{}
	for g, fw := range cs.byGroup {
		names[g], addrs[g] = fw.Location.String(), fw.Address
	}
	return names, addrs, cs, p.PID
}

// Every futex has a name that stays the same from run to run, though ASLR
// moves every mapping: the global mutex by its symbol (or, stripped, by
// the binary and the same offset), the heap one by its offset in the
// heap, the shared one as shared memory, the one on a thread's stack by
// that thread. The raw address differs; the name does not.
func TestFutexNamesStableAcrossRuns(t *testing.T) {
	aslr, _ := os.ReadFile("/proc/sys/kernel/randomize_va_space")
	for _, stripped := range []bool{false, true} {
		t.Run(fmt.Sprintf("stripped=%v", stripped), func(t *testing.T) {
			first, firstAddr, cs1, pid1 := convoyNames(t, stripped)
			second, secondAddr, cs2, pid2 := convoyNames(t, stripped)
			t.Logf("run 1: %v", first)
			t.Logf("run 2: %v", second)
			for _, g := range []string{"glob", "heap", "shm"} {
				assert.Equal(t, first[g], second[g], "group %s: the same name in both runs", g)
				if strings.TrimSpace(string(aslr)) != "0" {
					assert.NotEqual(t, firstAddr[g], secondAddr[g], "group %s: ASLR moved the mutex", g)
				}
				assert.NotContains(t, first[g], strconv.FormatUint(firstAddr[g], 16), "group %s: no address in the name", g)
			}
			if stripped {
				assert.Regexp(t, `^lock_convoy\+0x[0-9a-f]+$`, first["glob"], "stripped: the binary and the offset")
				assert.Empty(t, cs1.byGroup["glob"].Location.Symbol, "no symbol table to name it")
			} else {
				assert.Regexp(t, `^global_lock \(lock_convoy\+0x[0-9a-f]+\)$`, first["glob"])
				assert.Equal(t, "global_lock", cs1.byGroup["glob"].Location.ShortName())
			}
			assert.Regexp(t, `^\[heap\]\+0x[0-9a-f]+$`, first["heap"])
			assert.Regexp(t, `^shared memory \(anonymous\)\+0x0$`, first["shm"], "a MAP_SHARED|MAP_ANONYMOUS page")
			// The stack's name is its thread's, which differs by run: the
			// thread that owns it is the one named stk-owner.
			for _, c := range []struct {
				cs  convoySample
				pid int
			}{{cs1, pid1}, {cs2, pid2}} {
				owner := 0
				for tid, n := range c.cs.names {
					if n == "stk-owner" {
						owner = tid
					}
				}
				require.NotZero(t, owner)
				assert.Regexp(t, fmt.Sprintf(`^\[stack:%d\]\+0x[0-9a-f]+$`, owner), c.cs.byGroup["stk"].Location.String())
			}
			// Same offset from the stack's start in both runs.
			off := func(s string) string { _, o, _ := strings.Cut(s, "+"); return o }
			assert.Equal(t, off(first["stk"]), off(second["stk"]))
		})
	}
}

// The stripped build names the global mutex by the same offset as the
// symbol's in the unstripped one.
func TestStrippedNameIsTheSymbolsOffset(t *testing.T) {
	full, _, _, _ := convoyNames(t, false)
	stripped, _, _, _ := convoyNames(t, true)
	_, where, ok := strings.Cut(full["glob"], " (")
	require.True(t, ok, full["glob"])
	assert.Equal(t, strings.TrimSuffix(where, ")"), stripped["glob"])
}

// The holder a glibc mutex names is the thread that sleeps holding it,
// while the others wait on its futex: checked against /proc right after
// the read (asleep in nanosleep, or runnable on a busy machine, never
// queued), for every group, over several sweeps (a holder may hand the
// mutex on between ctprof's read and the check: most sweeps must agree,
// none may name a waiter or a thread of another group).
func TestMutexHolderIsTheSleepingThread(t *testing.T) {
	p := testnative.Start(t, "lock_convoy", strconv.Itoa(convoyPerGroup), "50000")
	agree, total := 0, 0
	for round := 0; round < 8; round++ {
		cs := sampleConvoy(t, p)
		for _, g := range convoyGroups {
			fw := cs.byGroup[g]
			if fw.Holder == nil {
				t.Logf("round %d group %s: no holder read (between holders)", round, g)
				continue
			}
			total++
			h := fw.Holder
			assert.Equal(t, "mutex", h.Lock)
			name := cs.names[h.TID]
			assert.True(t, name == g+"-0" || name == g+"-1" || name == g+"-2" || g == "stk" && name == "stk-owner",
				"group %s: the holder %q (tid %d) is of the group", g, name, h.TID)
			assert.NotContains(t, fw.TIDs, h.TID, "group %s: the holder does not wait on its own mutex", g)
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", p.PID, h.TID))
			if err != nil {
				continue
			}
			// Asleep with the lock held, or (on a loaded machine) woken
			// and runnable, about to release it: not queued for it.
			nr, _, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
			if nr == strconv.Itoa(unix.SYS_CLOCK_NANOSLEEP) || nr == strconv.Itoa(unix.SYS_NANOSLEEP) || nr == "running" {
				agree++
			} else {
				t.Logf("round %d group %s: holder %d now in %q", round, g, h.TID, strings.TrimSpace(string(b)))
			}
		}
	}
	t.Logf("%d of %d holders found asleep in nanosleep or runnable", agree, total)
	require.GreaterOrEqual(t, total, 16, "holders read in most sweeps")
	assert.GreaterOrEqual(t, float64(agree), 0.8*float64(total), "the named holder sleeps in nanosleep with the mutex held, or is about to release it")
}

// Without permission to read the target's memory the reader says so and
// names no holder (here: a target of another user, read as one with no
// ptrace rights over it, is simulated by a process that has exited).
func TestMemReaderToleratesAGoneProcess(t *testing.T) {
	p := testnative.Start(t, "lock_convoy", "2", "20000")
	cs := sampleConvoy(t, p)
	p.Stop()
	mem := NewFS("/proc").NewMemReader(p.PID)
	defer mem.Close()
	futexes := []FutexWait{cs.byGroup["glob"]}
	mem.FillHolders(futexes, cs.threads)
	assert.Nil(t, futexes[0].Holder)
	assert.False(t, mem.Denied(), "a gone process is not a missing permission")
}

// A C++ std::mutex in a namespace is named by its demangled symbol.
func TestStdMutexNamedDemangled(t *testing.T) {
	p := testnative.Start(t, "std_mutex", "3", "20000")
	fs := NewFS("/proc")
	r, err := fs.NewThreadReader(p.PID)
	require.NoError(t, err)
	defer r.Close()
	sym := symbolize.NewSymbolizer(fs.Target(p.PID))
	defer sym.Close()
	mem := fs.NewMemReader(p.PID)
	defer mem.Close()
	var lock *FutexWait
	require.NoError(t, testnative.PollUntil(30*time.Second, func() error {
		threads, err := r.Read(nil)
		if err != nil {
			return err
		}
		futexes := GroupFutexWaits(threads, sym)
		mem.FillHolders(futexes, threads)
		for i := range futexes {
			if futexes[i].Kind == FutexLock {
				lock = &futexes[i]
				if lock.Holder != nil {
					return nil
				}
			}
		}
		return fmt.Errorf("no lock with a holder yet: %+v", futexes)
	}))
	assert.Equal(t, "queue::lock", lock.Location.Symbol)
	assert.Regexp(t, `^queue::lock \(std_mutex\+0x[0-9a-f]+\)$`, lock.Location.String())
	assert.Equal(t, "mutex", lock.Holder.Lock)
}

// The stack pointer and program counter of a blocked thread are read
// from its syscall file.
func TestParseSyscallStackPointer(t *testing.T) {
	var th Thread
	parseSyscall([]byte("202 0x55d0c0a0 0x80 0x2 0x0 0x0 0x0 0x7ffd1234 0x7f00abcd\n"), &th)
	assert.Equal(t, 202, th.Syscall)
	assert.Equal(t, [5]uint64{0x55d0c0a0, 0x80, 2, 0, 0}, th.SyscallArgs)
	assert.Equal(t, uint64(0x7ffd1234), th.SyscallSP)
	assert.Equal(t, uint64(0x7f00abcd), th.SyscallPC)
	parseSyscall([]byte("running\n"), &th)
	assert.Zero(t, th.SyscallSP)
}
