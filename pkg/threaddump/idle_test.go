package threaddump

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idleScript is a live input: its text comes in pieces, and at the marked
// offsets the reader says ErrInputIdle (once or twice) before going on, as a
// followed log does when nothing more has been written for a while.
type idleScript struct {
	s     string
	off   int
	idles map[int]int // offset -> ErrInputIdle still to say there
	// pairs are the offsets after which a dump must be out (a quiet
	// second after its trailer); pairsDone counts those passed.
	pairs     []int
	pairsDone int
	step      int // largest piece given at once
}

func (p *idleScript) Read(b []byte) (int, error) {
	if n := p.idles[p.off]; n > 0 {
		p.idles[p.off] = n - 1
		if n == 1 {
			for p.pairsDone < len(p.pairs) && p.pairs[p.pairsDone] <= p.off {
				p.pairsDone++
			}
		}
		return 0, ErrInputIdle
	}
	if p.off == len(p.s) {
		return 0, io.EOF
	}
	end := min(len(p.s), p.off+len(b), p.off+p.step)
	for o := range p.idles { // stop at the next idle point
		if o > p.off && o < end && p.idles[o] > 0 {
			end = o
		}
	}
	n := copy(b, p.s[p.off:end])
	p.off += n
	return n, nil
}

// readLive reads every dump of a script; at each ErrInputIdle it checks
// that every dump whose quiet second has passed is out.
func readLive(t *testing.T, p *idleScript) ([]*Dump, error) {
	t.Helper()
	r := NewReader(p)
	var ds []*Dump
	for {
		d, err := r.Next()
		switch {
		case errors.Is(err, ErrInputIdle):
			require.GreaterOrEqual(t, len(ds), p.pairsDone, "a dump whose trailer was followed by a quiet second is out")
			continue
		case err == io.EOF:
			return ds, nil
		case err != nil:
			return ds, err
		}
		ds = append(ds, d)
	}
}

var headerAt = regexp.MustCompile(`(?m)^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\r?\n)?Full thread dump`)

// liveScript marks, in a log of dumps, a quiet second (two ErrInputIdle)
// before every dump after the first and at the end (after a last line
// with its newline, the line a JVM would write), as a JVM logging to a
// file gives, and single ErrInputIdle at random offsets, mid-line ones
// included, spaced so that no two fall between a trailer and the deadlock
// report after it.
func liveScript(s string, seed uint64) *idleScript {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := &idleScript{s: s, idles: map[int]int{}, step: 1 + rng.IntN(70000)}
	for i, m := range headerAt.FindAllStringIndex(s, -1) {
		if i > 0 {
			p.idles[m[0]] = 2
			p.pairs = append(p.pairs, m[0])
		}
	}
	p.idles[len(s)] = 2
	if strings.HasSuffix(s, "\n") { // a last line without its newline may go on
		p.pairs = append(p.pairs, len(s))
	}
	for o := rng.IntN(4096); o < len(s); o += 1024 + rng.IntN(64<<10) {
		if p.idles[o] == 0 {
			p.idles[o] = 1
		}
	}
	return p
}

// A live log gives exactly what the file gives, each dump as soon as a
// quiet second follows its trailer (not at the next dump or the end), with
// lines cut by an idle input kept whole.
func TestReaderIdleMatchesWholeOnCorpus(t *testing.T) {
	dir := sharedDumps(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	inputs := map[string]string{"log of 20": multiDumpLog(t, 20)}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		inputs[filepath.Base(f)] = string(b)
	}
	for name, s := range inputs {
		t.Run(name, func(t *testing.T) {
			whole, err := ParseString(s)
			require.NoError(t, err)
			for seed := range uint64(3) {
				live, err := readLive(t, liveScript(s, seed))
				require.NoError(t, err)
				require.Equal(t, whole, live, "seed %d", seed)
			}
		})
	}
}

// The last dump of a log that stays open comes out after a quiet second,
// with the deadlock report the JVM printed after its trailer; a dump whose
// trailer has not come yet does not, however long the input is quiet.
func TestReaderIdleCompletesTheLastDump(t *testing.T) {
	log := multiDumpLog(t, 2)
	cut := strings.LastIndex(log, "JNI global refs")
	open := log[:cut]
	p := &idleScript{s: open, idles: map[int]int{len(open): 5}, step: 4096}
	r := NewReader(p)
	d, err := r.Next()
	require.NoError(t, err, "the first dump ends where the second starts")
	assert.Len(t, d.Deadlocks, 3)
	for range 5 {
		_, err = r.Next()
		require.ErrorIs(t, err, ErrInputIdle, "no trailer yet: nothing, and not an end")
	}

	p.s = log
	p.idles[len(log)] = 2
	_, err = r.Next()
	require.ErrorIs(t, err, ErrInputIdle, "the trailer has just come: a report may follow")
	d, err = r.Next()
	require.NoError(t, err, "a quiet second after the trailer and the report completes the dump")
	assert.Len(t, d.Deadlocks, 3, "the deadlock report stays with its dump")
	p.idles[len(log)] = 100
	for range 3 {
		_, err = r.Next()
		require.ErrorIs(t, err, ErrInputIdle)
	}
	p.idles[len(log)] = 0
	_, err = r.Next()
	assert.Equal(t, io.EOF, err)
	whole, err := ParseString(log)
	require.NoError(t, err)
	assert.Equal(t, whole[1], d)
}

// A busy log goes on after the trailer, with a line that looks like the
// start of a thread name among its lines: the dump still ends at its
// trailer once a quiet second has passed, and the log lines are not in it.
func TestReaderIdleBusyLogAfterTheTrailer(t *testing.T) {
	log := multiDumpLog(t, 1)
	noise := "12:00:01 INFO  [main] served\n\"not-a-thread\" #25 is just a log line that starts with a quote\n\tat com.example.App.run(App.java:12)\n"
	live := log + noise + noise
	p := &idleScript{s: live, idles: map[int]int{len(log) + len(noise): 1, len(live): 1}, step: 1 << 20}
	r := NewReader(p)
	_, err := r.Next()
	require.ErrorIs(t, err, ErrInputIdle)
	d, err := r.Next()
	require.NoError(t, err)
	whole, err := ParseString(log)
	require.NoError(t, err)
	assert.Equal(t, whole[0], d)
}

// A live input that has written nothing yet, or a few bytes, is not a
// format error: the reader waits for its head.
func TestReaderIdleBeforeTheHead(t *testing.T) {
	log := multiDumpLog(t, 1)
	p := &idleScript{s: "", idles: map[int]int{0: 3}, step: 1 << 20}
	r := NewReader(p)
	for range 3 {
		_, err := r.Next()
		require.ErrorIs(t, err, ErrInputIdle)
	}
	p.s = log[:1]
	p.idles[1] = 1
	_, err := r.Next()
	require.ErrorIs(t, err, ErrInputIdle)
	p.s = log
	p.idles[len(log)] = 2
	_, err = r.Next()
	require.ErrorIs(t, err, ErrInputIdle, "the trailer has just come: a report may follow")
	d, err := r.Next()
	require.NoError(t, err)
	whole, err := ParseString(log)
	require.NoError(t, err)
	assert.Equal(t, whole[0], d)
}

// FuzzReaderIdle feeds any input in pieces with ErrInputIdle between them
// (mid-line too): no panic, line numbers inside the input, an error only
// where the plain reader has one; without a trailer the dumps are exactly
// the plain reader's, since only a trailer lets an idle input end a dump.
func FuzzReaderIdle(f *testing.F) {
	f.Add(lockLines, []byte{3, 0, 40, 1, 2, 0, 9, 0})
	f.Add("log\n12:\n2020-01-01 00:00:00\nFull thread dump x:\n\"a\" #1 prio=5 tid=0x1 nid=0x2 runnable\n\tat a.b(c)\nJNI global refs: 1, weak refs: 0\n\nFound one Java-level deadlock:\n\"x\":\n  waiting to lock monitor 0x1 (object 0x2, a y),\n  which is held by \"z\"\nFound 1 deadlock.\nlog\nFull thread dump y:\n", []byte{90, 0, 10, 0, 1, 0, 1, 0})
	f.Add("Full thread dump x:\n\"a\" #1 prio=5 tid=0x1 nid=0x2 runnable\nJNI global refs: 1\n\"b\" #2 prio=5 tid=0x2 nid=0x3 runnable\n", []byte{70, 0, 1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, s string, cuts []byte) {
		p := &idleScript{s: s, idles: map[int]int{}, step: 1 + len(s)/3}
		o := 0
		for i := 0; i+1 < min(len(cuts), 512); i += 2 { // bounded: each idle is a Read
			o += int(binary.LittleEndian.Uint16(cuts[i:]))
			if o > len(s) {
				break
			}
			p.idles[o]++
		}
		r := NewReader(p)
		var live []*Dump
		var lerr error
		for {
			d, err := r.Next()
			if errors.Is(err, ErrInputIdle) {
				continue
			}
			if err != nil {
				if err != io.EOF {
					lerr = err
				}
				break
			}
			live = append(live, d)
		}
		lines := strings.Count(s, "\n") + 1
		for _, d := range live {
			if d.Format == FormatHotSpot || d.Format == FormatThreadDumpText {
				assert.True(t, d.StartLine >= 1 && d.StartLine <= lines, "start line %d of %d", d.StartLine, lines)
			}
		}
		plain, _, perr := readAllStream(t, strings.NewReader(s))
		if strings.Contains(s, "JNI global ref") {
			return
		}
		assert.Equal(t, perr != nil, lerr != nil, "plain: %v, live: %v", perr, lerr)
		if perr == nil && lerr == nil {
			assert.Equal(t, plain, live)
		}
	})
}
