package otlp

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/google/pprof/profile"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/report"
)

// Delta is what cur, a profile of everything sampled so far, adds to prev,
// the one sent last time: a periodic export sends each window once, as
// continuous profilers expect. Samples that did not grow are left out.
// When the Aggregator's stack table filled, stacks were folded into
// "(other stacks)": what left them arrives there and is not new, so it is
// taken off other's samples of the same labels, or, for a thread name
// other had no room for, of the same labels with analysis.OtherThreads as
// the thread's name. A profile that gained
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
	takeOffMoved(d.Sample)
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

// moved is what left the folded stacks of one set of labels.
type moved struct {
	labels map[string][]string
	values []int64
}

// takeOffMoved takes what left folded stacks (their negative values) off
// the (other stacks) samples it went to: the one of the same labels, or,
// when other had no room for the thread's name, the one that counts it
// under analysis.OtherThreads.
func takeOffMoved(samples []*profile.Sample) {
	left := map[string]*moved{}
	for _, s := range samples {
		for i, v := range s.Value {
			if v >= 0 {
				continue
			}
			k := labelsKey(s.Label)
			if left[k] == nil {
				left[k] = &moved{labels: s.Label, values: make([]int64, len(s.Value))}
			}
			left[k].values[i] -= v
		}
	}
	if len(left) == 0 {
		return
	}
	other := map[string]*profile.Sample{}
	for _, s := range samples {
		if isOther(s) {
			other[labelsKey(s.Label)] = s
		}
	}
	for k, m := range left {
		o := other[k]
		if o == nil {
			if _, named := m.labels[report.PprofThreadNameLabel]; named {
				o = other[labelsKey(withThreadName(m.labels, analysis.OtherThreads))]
			}
		}
		if o == nil {
			continue
		}
		for i := range o.Value {
			o.Value[i] -= m.values[i]
		}
	}
}

// withThreadName is labels with the thread's name replaced by name.
func withThreadName(labels map[string][]string, name string) map[string][]string {
	out := maps.Clone(labels)
	out[report.PprofThreadNameLabel] = []string{name}
	return out
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

// labelsKey is a sample's labels as one string. Values are quoted: a
// thread's or pool's name is the target's and may hold "=", "," or ";".
func labelsKey(labels map[string][]string) string {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b = append(b, k...)
		b = append(b, '=')
		for _, v := range labels[k] {
			b = strconv.AppendQuote(b, v)
			b = append(b, ',')
		}
		b = append(b, ';')
	}
	return string(b)
}
