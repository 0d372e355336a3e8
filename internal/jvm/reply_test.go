package jvm

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/testjvm"
	"github.com/ctprof/ctprof/pkg/threaddump"
)

// A reply larger than the first read buffer arrives in chunks and is put
// together once, at its exact size; the next request of the command reads
// into one buffer sized from it. Both give the whole dump. (A first dump
// is sized from the thread count: TestFirstDumpIsReadIntoOneBuffer; here
// the expected size is set too small, as if the stacks had grown.)
func TestLargeReplyWholeAndExact(t *testing.T) {
	p := testjvm.Start(t, testjvm.JDK17(t), "ManyThreads", "1000", "21")
	info := inspect(t, p.PID)
	info.lastReply = map[string]int{"threaddump": 64 << 10}
	for i, path := range []string{"chunks assembled", "one buffer from the hint"} {
		res, err := ThreadDump(context.Background(), info, DumpOptions{})
		require.NoError(t, err, path)
		text := res.Text
		assert.Greater(t, len(text), 1<<20, "%s: a 1,000-thread dump of 30 frames is over 1 MB", path)
		if i == 0 {
			assert.Equal(t, len(text), cap(text), "%s: assembled at the exact size", path)
		} else {
			assert.LessOrEqual(t, cap(text), len(text)+len(text)/4+len("0\n"), "%s: sized from the last reply", path)
		}
		assert.Contains(t, string(text[len(text)-200:]), "JNI global refs", "%s: the dump ends with its trailer", path)
		dumps, err := threaddump.ParseOwnedBytes(text)
		require.NoError(t, err, path)
		d := dumps[len(dumps)-1]
		assert.Empty(t, d.Warnings, path)
		assert.Zero(t, d.UnknownLines, "%s: %v", path, d.UnknownSamples)
		conn := 0
		for _, th := range d.Threads {
			if bytes.HasPrefix([]byte(th.Name), []byte("conn-")) {
				conn++
				assert.GreaterOrEqual(t, len(th.Frames), 25, th.Name)
			}
		}
		assert.Equal(t, 1000, conn, path)
		// The status line is not part of the text.
		assert.Equal(t, len(text)+len("0\n"), info.lastReply["threaddump"], path)
	}
}
