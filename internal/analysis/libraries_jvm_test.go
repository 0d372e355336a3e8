package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ctprof/ctprof/internal/snapshot"
	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Real third-party libraries from Maven Central under concurrent load
// (testdata/javalibs, jars fetched by `make javalibs`). The truth is read from
// the jcmd dumps with the text rules below, written for these tests and not
// shared with ctprof's parser; then the same dump bytes go to the Aggregator
// and its lock table must agree.

// The lock lines of a HotSpot stack that say a thread waits on an object.
var (
	waitLockLineRE   = regexp.MustCompile(`^- waiting to lock <(0x[0-9a-f]+)>`)
	waitRelockLineRE = regexp.MustCompile(`^- waiting to re-lock in wait\(\) <(0x[0-9a-f]+)>`)
	waitOnLineRE     = regexp.MustCompile(`^- waiting on <(0x[0-9a-f]+)>`)
	waitOnNoRefLine  = "- waiting on <no object reference available>"
	lockedLineRE     = regexp.MustCompile(`^- locked <(0x[0-9a-f]+)> \(a ([^)]+)\)`)
	lineClassRE      = regexp.MustCompile(`<0x[0-9a-f]+> \(a ([^)]+)\)`)
)

// textWait is one thread's wait as the dump text shows it.
type textWait struct {
	thread  string
	address string
	class   string
	kind    string // "monitor", "relock" or "wait"
	inFlush bool   // a frame below the wait is LogToFile.flush (Derby)
}

// textWaits reads every thread's monitor wait from a dump by these rules:
// "waiting to lock <A>" enters monitor A; "waiting to re-lock in wait() <A>"
// re-acquires A after wait(); "waiting on <A>" is Object.wait on A, a
// re-acquire when the thread is BLOCKED; "waiting on <no object reference
// available>" (JDK 17 to 25 when the frame's object is not at hand) means
// the object of the next "- locked <A>" line of the same thread, where the
// waiting frame entered the monitor it now waits on.
func textWaits(dump []byte) []textWait {
	var out []textWait
	for _, st := range testjvm.ThreadStacks(dump) {
		blocked := strings.HasPrefix(st.State, "BLOCKED")
		for i, l := range st.Lines {
			w := textWait{thread: st.Name}
			switch {
			case waitLockLineRE.MatchString(l):
				w.address, w.kind = waitLockLineRE.FindStringSubmatch(l)[1], "monitor"
			case waitRelockLineRE.MatchString(l):
				w.address, w.kind = waitRelockLineRE.FindStringSubmatch(l)[1], "relock"
			case waitOnLineRE.MatchString(l):
				w.address, w.kind = waitOnLineRE.FindStringSubmatch(l)[1], "wait"
			case l == waitOnNoRefLine:
				w.kind = "wait"
				for _, next := range st.Lines[i+1:] {
					if m := lockedLineRE.FindStringSubmatch(next); m != nil {
						w.address = m[1]
						break
					}
				}
			default:
				continue
			}
			if w.kind == "wait" && blocked {
				w.kind = "relock"
			}
			if m := lineClassRE.FindStringSubmatch(l); m != nil {
				w.class = m[1]
			}
			for _, below := range st.Lines[i+1:] {
				if m := lockedLineRE.FindStringSubmatch(below); m != nil && m[1] == w.address && w.class == "" {
					w.class = m[2]
				}
				if strings.Contains(below, ".LogToFile.flush(") {
					w.inFlush = true
				}
			}
			if w.address != "" {
				out = append(out, w)
			}
			break // a thread waits on one thing: its topmost wait line
		}
	}
	return out
}

// byAddress counts the waits on objects of class by address.
func byAddress(ws []textWait, class string) map[string]int {
	m := map[string]int{}
	for _, w := range ws {
		if w.class == class {
			m[w.address]++
		}
	}
	return m
}

// truthOwner names the thread that holds address (a "- locked <A>" line
// with no wait on A), or "" when no thread does.
func truthOwner(dump []byte, address string) string {
	waiting := map[string]bool{}
	for _, w := range textWaits(dump) {
		if w.address == address {
			waiting[w.thread] = true
		}
	}
	for _, st := range testjvm.ThreadStacks(dump) {
		if !waiting[st.Name] && st.Has("- locked <"+address+">") {
			return st.Name
		}
	}
	return ""
}

// takeDump waits (bounded) for a dump in which cond holds of the text waits.
func takeDump(t *testing.T, p *testjvm.Process, cond func([]textWait) bool) []byte {
	t.Helper()
	return p.WaitForDump(t, 2*time.Minute, func(d []byte) bool { return cond(textWaits(d)) }, "-l")
}

func addDump(t *testing.T, a *Aggregator, dump []byte) {
	t.Helper()
	d := parseDump(t, dump)
	d.Time = time.Now() // jcmd's header has whole seconds only
	a.Add(&snapshot.Snapshot{Time: d.Time, Dump: d})
}

func firstLockFinding(s *Summary) *Finding {
	for i := range s.Findings {
		if s.Findings[i].Kind == FindingLockHotspot || s.Findings[i].Kind == FindingSerialization {
			return &s.Findings[i]
		}
	}
	return nil
}

const derbyLog = "org.apache.derby.impl.store.raw.log.LogToFile"

// Apache Derby's group commit: 16 writers commit small inserts; one thread
// writes and syncs the log while the others Object.wait on the LogToFile
// inside LogToFile.flush, and the ones just notified are BLOCKED
// re-acquiring it. All of them wait on one object: the convoy must lead.
func TestJVMLibraryDerbyGroupCommitConvoy(t *testing.T) {
	const writers = 16
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			p := testjvm.StartLib(t, j, "DerbyGroupCommit", "16")
			a := New()
			var dumps [][]byte
			for i := 0; i < 3; i++ {
				dump := takeDump(t, p, func(ws []textWait) bool {
					n := 0
					for _, w := range ws {
						if w.class == derbyLog && w.inFlush {
							n++
						}
					}
					return n >= writers/2
				})
				dumps = append(dumps, dump)
				addDump(t, a, dump)
			}
			p.Stop()

			// The truth over the three dumps: the LogToFile's address (one
			// object; the GC may move it between dumps), its waiters by
			// dump, and its waiters by kind over all dumps.
			// The summary names the owner or releaser of the lock's peak
			// dump (the last one with the most waiters): the truth for
			// it is that dump's threads working in flush.
			peak, peakAddr := 0, ""
			kinds := map[string]int{}
			var working map[string]bool // in LogToFile.flush, not waiting, in the peak dump
			for _, dump := range dumps {
				ws := textWaits(dump)
				addrs := byAddress(ws, derbyLog)
				require.Len(t, addrs, 1, "one LogToFile is waited on")
				isPeak := false
				for addr, n := range addrs {
					if n >= peak {
						peak, peakAddr, isPeak = n, addr, true
					}
				}
				waiting := map[string]bool{}
				for _, w := range ws {
					waiting[w.thread] = true
					if w.class == derbyLog {
						kinds[w.kind]++
						// Writers also enter the log's monitor elsewhere
						// (appending a record); wait() is in flush only.
						if w.kind != "monitor" {
							assert.True(t, w.inFlush, "%s waits (%s) on the log outside LogToFile.flush", w.thread, w.kind)
						}
					}
				}
				if !isPeak {
					continue
				}
				working = map[string]bool{}
				for _, st := range testjvm.ThreadStacks(dump) {
					if !waiting[st.Name] && st.Has(".LogToFile.flush(") {
						working[st.Name] = true
					}
				}
			}
			t.Logf("%s: peak %d waiters on LogToFile %s; kinds over 3 dumps %v; working in flush in the peak dump %v", j.Name, peak, peakAddr, kinds, working)

			s := a.Summary()
			got := locksOf(s, derbyLog)
			require.Len(t, got, 1, "one LogToFile lock over the run")
			var l LockSummary
			for _, v := range got {
				l = v
			}
			assert.Equal(t, peak, l.Waiters, "peak waiters")
			assert.Equal(t, len(dumps), l.DumpsSeen)
			assert.Equal(t, "monitor", l.Resource)
			assert.Contains(t, principalKinds(kinds), l.Kind, "principal wait kind of %v", kinds)
			assert.Equal(t, kinds, l.WaitKinds, "waiter samples by kind")
			if assert.NotNil(t, l.WaitFrame) {
				assert.Contains(t, *l.WaitFrame, "LogToFile.flush")
			}
			// Who can release the convoy: the thread working in the commit
			// path (writing or syncing the log), when the peak dump showed
			// one.
			if len(working) > 0 {
				named := l.Releaser
				if named == nil {
					named = l.Owner
				}
				if assert.NotNil(t, named, "releaser or owner of the LogToFile") {
					assert.True(t, working[*named], "%s is not one of the threads working in LogToFile.flush %v", *named, working)
				}
			}
			require.NotEmpty(t, s.Findings)
			assert.Contains(t, s.Findings[0].Summary, "LogToFile", "the convoy leads the findings")
		})
	}
}

// principalKinds are the kinds with the most waiter samples: one, or
// several on a tie (Derby's wait and relock samples can tie, and how a tie
// is broken is not the truth's business).
func principalKinds(kinds map[string]int) []string {
	most := 0
	for _, n := range kinds {
		most = max(most, n)
	}
	var out []string
	for k, n := range kinds {
		if n == most {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

const h2Transaction = "org.h2.mvstore.tx.Transaction"

// H2 row locks: 16 workers update 2 rows, each holding its row ~5 ms before
// commit. A worker whose row is taken Object.waits on the Transaction that
// holds it (Transaction.waitForThisToEnd), so one dump shows two
// Transaction instances with about 7 waiters each and no owner: the holder
// sleeps in the application, outside any monitor.
func TestJVMLibraryH2RowLockWaits(t *testing.T) {
	const workers, rows = 16, 2
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			p := testjvm.StartLib(t, j, "H2RowLocks", "16", "2")
			var dumps [][]byte
			for i := 0; i < 3; i++ {
				dumps = append(dumps, takeDump(t, p, func(ws []textWait) bool {
					addrs := byAddress(ws, h2Transaction)
					total := 0
					for _, n := range addrs {
						total += n
					}
					return len(addrs) == rows && total >= workers-rows-2
				}))
			}
			p.Stop()
			// Each transaction is a new object, so each dump has its own
			// locks: check every dump on its own Aggregator.
			for i, dump := range dumps {
				ws := textWaits(dump)
				truth := byAddress(ws, h2Transaction)
				kinds := map[string]map[string]int{}
				total := 0
				for _, w := range ws {
					if w.class != h2Transaction {
						continue
					}
					if kinds[w.address] == nil {
						kinds[w.address] = map[string]int{}
					}
					kinds[w.address][w.kind]++
					total++
				}
				t.Logf("%s dump %d: waiters by Transaction %v, kinds %v", j.Name, i+1, truth, kinds)

				a := New()
				addDump(t, a, dump)
				s := a.Summary()
				got := locksOf(s, h2Transaction)
				require.Len(t, got, len(truth), "dump %d: one lock per Transaction instance", i+1)
				for addr, n := range truth {
					l, ok := got[addr]
					require.True(t, ok, "dump %d: Transaction %s missing", i+1, addr)
					assert.Equal(t, n, l.Waiters, addr)
					assert.Contains(t, principalKinds(kinds[addr]), l.Kind, addr)
					assert.Equal(t, kinds[addr], l.WaitKinds, addr)
					assert.Equal(t, "monitor", l.Resource, addr)
					assert.Equal(t, truthOwner(dump, addr), ptrString(l.Owner), "owner of %s", addr)
					// The holder sleeps in the application between its
					// UPDATE and its commit, outside H2's code and any
					// monitor, so the dump alone cannot name it. The test
					// can: worker-i updates row i mod rows, so the holder is
					// a worker of the waiters' row that is not waiting. A
					// releaser ctprof names must be one of those.
					holders := rowHolders(dump, ws, addr, rows)
					t.Logf("%s dump %d: Transaction %s releaser %q, possible holders %v", j.Name, i+1, addr, ptrString(l.Releaser), holders)
					if l.Releaser != nil {
						assert.Contains(t, holders, *l.Releaser, "releaser of %s is not a worker of its row that is not waiting", addr)
					}
					if assert.NotNil(t, l.WaitFrame, addr) {
						assert.Contains(t, *l.WaitFrame, "Transaction.waitForThisToEnd", addr)
					}
				}
				var sites []ContentionSite
				for _, c := range s.ContentionSites {
					if c.Class == h2Transaction {
						sites = append(sites, c)
					}
				}
				require.Len(t, sites, 1, "dump %d: one contention site", i+1)
				assert.Equal(t, len(truth), sites[0].Instances)
				assert.Equal(t, total, sites[0].Waiters)
				assert.False(t, sites[0].Striped, "7 waiters per instance is no stripe")
				f := firstLockFinding(s)
				if assert.NotNil(t, f, "dump %d: a lock finding for %d of %d workers waiting", i+1, total, workers) {
					assert.Contains(t, f.Summary, "Transaction")
				}
			}
		})
	}
}

// rowHolders lists the workers that may hold the row whose waiters wait on
// address: the workers of the same row (worker-i updates row i mod rows)
// that do not wait on any Transaction.
func rowHolders(dump []byte, ws []textWait, address string, rows int) []string {
	row := -1
	waiting := map[string]bool{}
	for _, w := range ws {
		if w.class != h2Transaction {
			continue
		}
		waiting[w.thread] = true
		if w.address == address {
			var i int
			if _, err := fmt.Sscanf(w.thread, "worker-%d", &i); err == nil {
				row = i % rows
			}
		}
	}
	var out []string
	for _, st := range testjvm.ThreadStacks(dump) {
		var i int
		if _, err := fmt.Sscanf(st.Name, "worker-%d", &i); err != nil || i%rows != row || waiting[st.Name] {
			continue
		}
		out = append(out, st.Name)
	}
	return out
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

const log4jManager = "org.apache.logging.log4j.core.appender.rolling.RollingFileManager"

// Log4j 2 with a synchronous rolling file appender: 16 loggers, every event
// written under the file manager's monitor, so most loggers are BLOCKED
// entering it (RollingFileManager.checkRollover, OutputStreamManager
// writeBytes). One object; the GC may move it between dumps, and it stays
// one lock.
func TestJVMLibraryLog4jFileAppenderMonitor(t *testing.T) {
	const loggers = 16
	for _, j := range testjvm.All(t) {
		t.Run(j.Name, func(t *testing.T) {
			p := testjvm.StartLib(t, j, "Log4jFileAppender", "16")
			a := New()
			var dumps [][]byte
			for i := 0; i < 3; i++ {
				dump := takeDump(t, p, func(ws []textWait) bool {
					n := 0
					for _, c := range byAddress(ws, log4jManager) {
						n += c
					}
					return n >= loggers/2
				})
				dumps = append(dumps, dump)
				addDump(t, a, dump)
			}
			p.Stop()

			peak := 0
			addrs := map[string]bool{}
			kinds := map[string]int{}
			owners := map[string]bool{}
			for _, dump := range dumps {
				ws := textWaits(dump)
				byAddr := byAddress(ws, log4jManager)
				require.Len(t, byAddr, 1, "one file manager is waited on")
				for addr, n := range byAddr {
					addrs[addr] = true
					peak = max(peak, n)
					if o := truthOwner(dump, addr); o != "" {
						owners[o] = true
					}
				}
				for _, w := range ws {
					if w.class == log4jManager {
						kinds[w.kind]++
					}
				}
			}
			t.Logf("%s: peak %d waiters; addresses %v; kinds %v; owners %v", j.Name, peak, addrs, kinds, owners)

			s := a.Summary()
			got := locksOf(s, log4jManager)
			require.Len(t, got, 1, "one file manager lock over the run, addresses %v", addrs)
			for addr, l := range got {
				assert.True(t, addrs[addr], "address %s is one the dumps showed", addr)
				assert.Equal(t, peak, l.Waiters)
				assert.Equal(t, len(dumps), l.DumpsSeen)
				assert.Contains(t, principalKinds(kinds), l.Kind)
				assert.Equal(t, kinds, l.WaitKinds)
				assert.Equal(t, "monitor", l.Resource)
				if l.Owner != nil {
					assert.True(t, owners[*l.Owner], "owner %s held the manager in some dump (%v)", *l.Owner, owners)
				}
			}
			require.NotEmpty(t, s.Findings)
			assert.Contains(t, s.Findings[0].Summary, "RollingFileManager", "the appender's lock leads the findings")
		})
	}
}
