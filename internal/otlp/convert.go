// Package otlp sends ctprof's profiles to an OpenTelemetry Collector (or
// any OTLP endpoint) as OTLP profiles (the v1development signal) over
// HTTP/protobuf. A profile is the very pprof profile `--pprof` writes
// (report.PprofProfile), turned into OTLP's data model with the
// collector's own pdata/pprofile module, so the two outputs never
// disagree; a periodic export sends what changed since the last one.
package otlp

import (
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/ctprof/ctprof/internal/report"
)

// Sample attribute keys: what pprof's labels are called in OTLP.
const (
	// AttrPool is the thread's pool: its name with every run of digits
	// written N (pprof's "thread" label).
	AttrPool = "ctprof.pool"
	// AttrThreadName is the thread's own name (pprof's "thread_name"),
	// the semantic conventions' key; analysis.OtherThreads for the
	// threads past a stack's bound on names.
	AttrThreadName = "thread.name"
	// AttrState is the thread's state in the sample (pprof's "state").
	AttrState = "thread.state"
	// AttrSource says who measured a wait sample: "jfr" or "futex-trace".
	AttrSource = "ctprof.source"
	// AttrLock is the class of the lock a sample queued on (pprof's
	// "lock"); AttrResource the resource it waited at, as the JSON
	// summary's contention_sites[].id (pprof's "resource").
	AttrLock     = "ctprof.lock.class"
	AttrResource = "ctprof.resource"
	// AttrMeasuredBy, on a profile, says where its values come from:
	// "thread-samples" (estimated from the sampled stacks), "jfr" or
	// "futex-trace" (each wait measured).
	AttrMeasuredBy = "ctprof.measured_by"
)

// labelKeys maps pprof labels to attribute keys.
var labelKeys = map[string]string{"thread": AttrPool, report.PprofThreadNameLabel: AttrThreadName, "state": AttrState,
	"source": AttrSource, "lock": AttrLock, "resource": AttrResource}

// AttributeKey is the sample attribute key a pprof label is sent as: its
// own (AttrPool, AttrThreadName, ...) or "ctprof." and the label.
func AttributeKey(label string) string {
	if k := labelKeys[label]; k != "" {
		return k
	}
	return "ctprof." + label
}

// Resource describes the process a profile is of.
type Resource struct {
	PID        int
	Executable string
	// Runtime is "jvm" or "native".
	Runtime string
	Host    string
	// Attributes are more resource attributes (service.name,
	// OTEL_RESOURCE_ATTRIBUTES, the Kubernetes pod's); they do not
	// replace the ones above.
	Attributes map[string]string
}

func (r Resource) fill(m pcommon.Map) {
	for k, v := range r.Attributes {
		m.PutStr(k, v)
	}
	m.PutInt("process.pid", int64(r.PID))
	if r.Executable != "" {
		m.PutStr("process.executable.name", r.Executable)
	}
	if r.Runtime != "" {
		m.PutStr("process.runtime.name", r.Runtime)
	}
	if r.Host != "" {
		m.PutStr("host.name", r.Host)
	}
}

// Convert turns a pprof profile into OTLP profiles: one profile per sample
// type that has any value (OTLP's profile has one), sharing one
// dictionary, each with the samples whose value of that type is not zero.
// Stacks, functions, files and lines are pprof's; labels become sample
// attributes (AttributeKey: AttrPool, AttrThreadName, AttrState, ...).
func Convert(p *profile.Profile, res Resource, version string) (pprofile.Profiles, error) {
	out := pprofile.NewProfiles()
	b := newDictionary(out.Dictionary())
	rp := out.ResourceProfiles().AppendEmpty()
	res.fill(rp.Resource().Attributes())
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.Scope().SetName("ctprof")
	sp.Scope().SetVersion(version)
	// A sample's stack and attributes are the same in every profile it
	// is in: looked up once (a stack's samples, one per state, pool,
	// lock and thread, share its locations, but each would build its
	// key again).
	indices := make([]sampleIndices, len(p.Sample))
	for i, st := range p.SampleType {
		if !anyValue(p, i) {
			continue
		}
		prof := sp.Profiles().AppendEmpty()
		prof.SampleType().SetTypeStrindex(b.str(st.Type))
		prof.SampleType().SetUnitStrindex(b.str(st.Unit))
		if p.PeriodType != nil {
			prof.PeriodType().SetTypeStrindex(b.str(p.PeriodType.Type))
			prof.PeriodType().SetUnitStrindex(b.str(p.PeriodType.Unit))
			prof.SetPeriod(p.Period)
		}
		prof.SetTime(pcommon.Timestamp(p.TimeNanos))
		prof.SetDurationNano(uint64(max(p.DurationNanos, 0)))
		var id pprofile.ProfileID
		_, _ = rand.Read(id[:])
		prof.SetProfileID(id)
		prof.AttributeIndices().Append(b.attr(AttrMeasuredBy, measuredBy(p, i, st.Type)))
		for j, s := range p.Sample {
			if i >= len(s.Value) || s.Value[i] == 0 {
				continue
			}
			x := &indices[j]
			if x.stack == 0 {
				*x = b.sample(s)
			}
			os := prof.Samples().AppendEmpty()
			os.SetStackIndex(x.stack)
			os.Values().Append(s.Value[i])
			os.AttributeIndices().Append(x.attrs...)
		}
	}
	if b.err != nil {
		return pprofile.Profiles{}, b.err
	}
	return out, nil
}

// anyValue reports whether any sample has a value of type i.
func anyValue(p *profile.Profile, i int) bool {
	for _, s := range p.Sample {
		if i < len(s.Value) && s.Value[i] != 0 {
			return true
		}
	}
	return false
}

// measuredBy says where values of sample type i come from: the measured
// waits' source for contentions and delay, else the thread samples.
func measuredBy(p *profile.Profile, i int, typ string) string {
	if typ != "contentions" && typ != "delay" {
		return "thread-samples"
	}
	var sources []string
	for _, s := range p.Sample {
		if i < len(s.Value) && s.Value[i] != 0 {
			for _, v := range s.Label["source"] {
				if !slices.Contains(sources, v) {
					sources = append(sources, v)
				}
			}
		}
	}
	if len(sources) == 0 {
		return "thread-samples"
	}
	slices.Sort(sources)
	return strings.Join(sources, ",")
}

// dictionary fills a ProfilesDictionary, each table with its zero entry
// first as the format asks, and finds entries by key in maps (pprofile's
// Set* helpers search the tables linearly).
type dictionary struct {
	d      pprofile.ProfilesDictionary
	strs   map[string]int32
	funcs  map[funcKey]int32
	locs   map[uint64]int32 // by pprof location ID
	stacks map[string]int32
	// stackKey is stack's reused key buffer.
	stackKey []byte
	attrs    map[[2]string]int32
	err      error
}

type funcKey struct{ name, system, file string }

func newDictionary(d pprofile.ProfilesDictionary) *dictionary {
	b := &dictionary{d: d, strs: map[string]int32{}, funcs: map[funcKey]int32{}, locs: map[uint64]int32{}, stacks: map[string]int32{}, attrs: map[[2]string]int32{}}
	b.str("")
	d.MappingTable().AppendEmpty()
	d.FunctionTable().AppendEmpty()
	d.LocationTable().AppendEmpty()
	d.StackTable().AppendEmpty()
	d.AttributeTable().AppendEmpty()
	return b
}

func (b *dictionary) str(s string) int32 {
	if i, ok := b.strs[s]; ok {
		return i
	}
	i := int32(b.d.StringTable().Len())
	b.d.StringTable().Append(s)
	b.strs[s] = i
	return i
}

func (b *dictionary) function(f *profile.Function) int32 {
	k := funcKey{f.Name, f.SystemName, f.Filename}
	if i, ok := b.funcs[k]; ok {
		return i
	}
	i := int32(b.d.FunctionTable().Len())
	fn := b.d.FunctionTable().AppendEmpty()
	fn.SetNameStrindex(b.str(f.Name))
	fn.SetSystemNameStrindex(b.str(f.SystemName))
	fn.SetFilenameStrindex(b.str(f.Filename))
	fn.SetStartLine(f.StartLine)
	b.funcs[k] = i
	return i
}

func (b *dictionary) location(l *profile.Location) int32 {
	if i, ok := b.locs[l.ID]; ok {
		return i
	}
	i := int32(b.d.LocationTable().Len())
	loc := b.d.LocationTable().AppendEmpty()
	loc.SetAddress(l.Address)
	for _, ln := range l.Line {
		if ln.Function == nil {
			continue
		}
		ol := loc.Lines().AppendEmpty()
		ol.SetFunctionIndex(b.function(ln.Function))
		ol.SetLine(ln.Line)
	}
	b.locs[l.ID] = i
	return i
}

// sampleIndices are a sample's stack (never 0, the table's zero entry,
// once known) and attributes in the dictionary.
type sampleIndices struct {
	stack int32
	attrs []int32
}

// sample is the dictionary's indices of s: its stack, and its labels as
// attributes (AttributeKey), by label.
func (b *dictionary) sample(s *profile.Sample) sampleIndices {
	x := sampleIndices{stack: b.stack(s.Location)}
	for _, k := range slices.Sorted(maps.Keys(s.Label)) {
		key := AttributeKey(k)
		for _, v := range s.Label[k] {
			x.attrs = append(x.attrs, b.attr(key, v))
		}
	}
	return x
}

// stack is the stack table's index of a sample's locations (leaf first,
// as in pprof). The key is built in a reused buffer and looked up
// without a copy.
func (b *dictionary) stack(locs []*profile.Location) int32 {
	key := b.stackKey[:0]
	for _, l := range locs {
		key = strconv.AppendInt(key, int64(b.location(l)), 10)
		key = append(key, ',')
	}
	b.stackKey = key
	if i, ok := b.stacks[string(key)]; ok {
		return i
	}
	i := int32(b.d.StackTable().Len())
	idx := b.d.StackTable().AppendEmpty().LocationIndices()
	idx.EnsureCapacity(len(locs))
	for _, l := range locs {
		idx.Append(b.location(l))
	}
	b.stacks[string(key)] = i
	return i
}

func (b *dictionary) attr(k, v string) int32 {
	key := [2]string{k, v}
	if i, ok := b.attrs[key]; ok {
		return i
	}
	if b.d.AttributeTable().Len() >= 1<<30 {
		b.err = fmt.Errorf("too many attributes")
		return 0
	}
	i := int32(b.d.AttributeTable().Len())
	kv := b.d.AttributeTable().AppendEmpty()
	kv.SetKeyStrindex(b.str(k))
	kv.Value().SetStr(v)
	b.attrs[key] = i
	return i
}
