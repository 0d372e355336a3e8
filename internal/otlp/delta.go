package otlp

import (
	"time"

	"github.com/google/pprof/profile"
)

// Delta is what cur, a profile of everything sampled so far, adds to prev,
// the one sent last time: a periodic export sends each window once, as
// continuous profilers expect. Samples that did not grow are left out; a
// value that shrank (a stack folded into "other" when the table filled)
// counts as zero. The delta covers [start, now). With no prev, or when the
// two cannot be merged (a JFR recording added sample types), cur is the
// delta.
func Delta(prev, cur *profile.Profile, start, now time.Time) *profile.Profile {
	d := delta(prev, cur)
	d.TimeNanos = start.UnixNano()
	d.DurationNanos = max(now.Sub(start).Nanoseconds(), 0)
	return d
}

func delta(prev, cur *profile.Profile) *profile.Profile {
	if prev == nil {
		return cur.Copy()
	}
	neg := prev.Copy()
	neg.Scale(-1)
	d, err := profile.Merge([]*profile.Profile{cur.Copy(), neg})
	if err != nil {
		return cur.Copy()
	}
	kept := d.Sample[:0]
	for _, s := range d.Sample {
		grew := false
		for i, v := range s.Value {
			if v < 0 {
				s.Value[i] = 0
			}
			grew = grew || v > 0
		}
		if grew {
			kept = append(kept, s)
		}
	}
	d.Sample = kept
	d.Comments = cur.Comments
	return d
}
