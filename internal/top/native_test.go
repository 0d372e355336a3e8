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
// the lock pane lists the resources (a wait site and a kind of primitive
// over every futex word waited on), each with what its holders do, and a
// resource's detail names its instances by their stable names with their
// holders, what the holders did, and a waiter's stack.
func TestNativeLockScreens(t *testing.T) {
	for _, tt := range []struct {
		name string
		keys []string
		want []string
	}{
		{"native-locks-120x40", nil, []string{"waiting for: 7 at convoy (mutex, ", "4 instances)", "Resources (", "WAIT SITE", "HOLDERS DO"}},
		{"native-lock-holder-120x40", []string{"enter"}, []string{"Resource  mutex at convoy", "Instances in the lock table:", "global_lock",
			"[heap]+0x2a0", "shared memory (anonymous)+0x0", "held by glob-", "What the holders did (samples):", "A waiter's stack", "at pthread_mutex_lock"}},
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
				// The top resource's row says what its holders do: asleep
				// with the lock held (lock_convoy's holders sleep in it).
				rows := regexp.MustCompile(`(?m)^[ ›]mutex .*$`).FindAllString(screen, -1)
				require.NotEmpty(t, rows, screen)
				assert.Regexp(t, `nanosleep|running`, rows[0], "what the holders do")
			}
			testgolden.Check(t, filepath.Join("testdata", "screens", tt.name+".txt"), []byte(screen+"\n"), *update, refresh)
		})
	}
}
