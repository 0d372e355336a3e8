package earlydump

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ctprof/ctprof/internal/cli"
)

func TestOneShotPID(t *testing.T) {
	tests := []struct {
		args string
		pid  int // 0: not a one-shot
	}{
		{"attach 1234 --count 1", 1234},
		{"attach --count 1 1234", 1234},
		{"attach 1234 --count=1", 1234},
		{"attach 1234 -n 1", 1234},
		{"attach 1234 -n1", 1234},
		{"attach 1234 -n=1", 1234},
		{"attach 1234 -n 1 --format json", 1234},
		{"attach 1234 -n 1 --format=text", 1234},
		{"attach 1234 -n 1 -f json", 1234},
		{"attach 1234 -n 1 -fjson", 1234},
		{"attach 1234 -n 1 --top 5", 1234},
		{"attach 1234 -n 1 --top=0 -f text", 1234},

		{"attach 1234", 0},                            // runs until Ctrl-C
		{"attach 1234 --count 2", 0},                  // more than one sample
		{"attach 1234 --count 01", 0},                 // spelled unlike a one-shot
		{"attach 1234 --count", 0},                    // no value
		{"attach 1234 --count 1 --count 1", 0},        // repeated
		{"attach 1234 -n 1 --count 1", 0},             // repeated under two names
		{"attach 1234 --count 1 --locks", 0},          // another kind of dump
		{"attach 1234 --count 1 --dump-mode file", 0}, // another kind of dump
		{"attach 1234 --count 1 --no-dumps", 0},
		{"attach 1234 --count 1 --jfr", 0},
		{"attach 1234 --count 1 --record r.ctprof", 0},
		{"attach 1234 --count 1 --proc-root /x", 0},
		{"attach 1234 --count 1 --format xml", 0},
		{"attach 1234 --count 1 --top -3", 0},
		{"attach 1234 --count 1 -h", 0},
		{"attach 1234 --count 1 --help", 0},
		{"attach --count 1 --name java", 0},
		{"attach 1234 5678 --count 1", 0},
		{"attach 0 --count 1", 0},
		{"attach -5 --count 1", 0},
		{"attach +5 --count 1", 0},
		{"attach 0x10 --count 1", 0},
		{"attach 99999999999999999999 --count 1", 0},
		{"attach --count 1 -- 1234", 0},
		{"attach - --count 1", 0},
		{"attach --count 1", 0},
		{"top 1234 --count 1", 0},
		{"report 1234 --count 1", 0},
		{"attach", 0},
		{"", 0},
	}
	for _, tc := range tests {
		t.Run(tc.args, func(t *testing.T) {
			pid, ok := OneShotPID(strings.Fields(tc.args))
			assert.Equal(t, tc.pid != 0, ok)
			assert.Equal(t, tc.pid, pid)
		})
	}
}

// The flags OneShotPID accepts are attach's, under the names and
// shorthands attach gives them: renaming one there fails here rather than
// turning early dumps off unnoticed (or on for another flag).
func TestOneShotFlagsAreAttachFlags(t *testing.T) {
	attach, _, err := cli.NewRootCmd(cli.IO{}).Find([]string{"attach"})
	if !assert.NoError(t, err) {
		return
	}
	for long, short := range map[string]string{"count": "n", "format": "f", "top": ""} {
		f := attach.Flags().Lookup(long)
		if assert.NotNil(t, f, "--%s", long) {
			assert.Equal(t, short, f.Shorthand, "--%s", long)
		}
	}
	assert.Equal(t, "0", attach.Flags().Lookup("count").DefValue, "without --count, attach runs until stopped")
}
