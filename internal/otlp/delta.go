package otlp

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/ctprof/ctprof/internal/analysis"
)

// Delta is what cur, a profile of everything sampled so far, adds to prev,
// the one sent last time: a periodic export sends each window once, as
// continuous profilers expect. Samples that did not grow are left out.
// When the Aggregator's stack table filled, stacks were folded into
// "(other stacks)": what left them arrives there and is not new, so it is
// taken off other's samples of the same labels. A profile that gained
// sample types since (a JFR recording's first waits) is compared with zero
// values for them. The delta covers [start, now). With no prev, or when the
// two still cannot be merged, cur is the delta.
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
	neg := widen(prev, cur.SampleType).Copy()
	neg.Scale(-1)
	d, err := profile.Merge([]*profile.Profile{cur.Copy(), neg})
	if err != nil {
		return cur.Copy()
	}
	// What left a folded stack, by labels.
	moved := map[string][]int64{}
	for _, s := range d.Sample {
		for i, v := range s.Value {
			if v < 0 {
				k := labelsKey(s)
				if moved[k] == nil {
					moved[k] = make([]int64, len(s.Value))
				}
				moved[k][i] -= v
			}
		}
	}
	kept := d.Sample[:0]
	for _, s := range d.Sample {
		if m := moved[labelsKey(s)]; m != nil && isOther(s) {
			for i := range s.Value {
				s.Value[i] -= m[i]
			}
		}
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

// widen gives p the sample types of cur's when p's are a prefix of them
// (ctprof's pprof profile adds contentions and delay once measured waits
// arrive), its samples 0 for the new ones.
func widen(p *profile.Profile, types []*profile.ValueType) *profile.Profile {
	if len(p.SampleType) >= len(types) {
		return p
	}
	for i, t := range p.SampleType {
		if t.Type != types[i].Type || t.Unit != types[i].Unit {
			return p
		}
	}
	w := p.Copy()
	w.SampleType = nil
	for _, t := range types {
		w.SampleType = append(w.SampleType, &profile.ValueType{Type: t.Type, Unit: t.Unit})
	}
	for _, s := range w.Sample {
		s.Value = append(s.Value, make([]int64, len(types)-len(s.Value))...)
	}
	return w
}

// isOther reports the Aggregator's "(other stacks)" entry.
func isOther(s *profile.Sample) bool {
	return len(s.Location) == 1 && len(s.Location[0].Line) == 1 && s.Location[0].Line[0].Function != nil &&
		s.Location[0].Line[0].Function.Name == analysis.OtherStacks
}

// labelsKey is a sample's labels as one string.
func labelsKey(s *profile.Sample) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s.Label)) {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strings.Join(s.Label[k], ","))
		b.WriteByte(';')
	}
	return b.String()
}
