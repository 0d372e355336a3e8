package top

import (
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/muesli/termenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/record"
	"github.com/ctprof/ctprof/internal/testgolden"
)

// replayNative replays a recording of a native process (no thread dump;
// the native stacks of its blocked threads).
func replayNative(t *testing.T, name string) Refresh {
	t.Helper()
	r, err := record.Open(filepath.Join("testdata", name+".ctprof"))
	require.NoError(t, err)
	defer r.Close()
	agg := analysis.New()
	for {
		snap, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		agg.Add(snap)
	}
	return Refresh{Summary: agg.Summary()}
}

// A native lock convoy, recorded with
//
//	ctprof attach PID --count 4 --interval 500ms --record internal/top/testdata/lockconvoy.ctprof
//
// against testdata/c/lock_convoy.c (3 threads per group, 20 ms holds):
// the lock pane names each futex by its stable name and its OWNER column
// the holder the mutex named (no "?"), and the lock's detail says what
// the holder did, its stack, and where the waiters wait.
func TestNativeLockScreens(t *testing.T) {
	for _, tt := range []struct {
		name string
		keys []string
		want []string
	}{
		{"native-locks-120x40", nil, []string{"waiting for: 7 at convoy (mutex, avg 6.2, 4 instances)", "global_lock", "[heap]+0x2a0", "shared memory (anonymous)+0x0"}},
		{"native-lock-holder-120x40", []string{"enter"}, []string{"Holder: ", "(tid ", "mutex)", "What the holder did while holding it",
			"  stack     clock_nanosleep", "convoy", "Waiters wait at (samples):"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newSized(Options{Interval: 5e8, Profile: termenv.Ascii}, 120, 40)
			m.Update(replayNative(t, "lockconvoy"))
			press(m, tt.keys...)
			screen := m.View()
			checkScreen(t, screen, 120, 40)
			for _, s := range tt.want {
				assert.Contains(t, screen, s)
			}
			if tt.keys == nil {
				// Every futex row names an owner: glob-N, heap-N, shm-N or stk-….
				rows := regexp.MustCompile(`(?m)^[ ›]futex .*$`).FindAllString(screen, -1)
				require.NotEmpty(t, rows, screen)
				for _, r := range rows {
					assert.Regexp(t, `(glob|heap|shm|stk)-(\d|owner)`, r, "the holder in the OWNER column")
				}
			}
			testgolden.Check(t, filepath.Join("testdata", "screens", tt.name+".txt"), []byte(screen+"\n"), *update, refresh)
		})
	}
}
