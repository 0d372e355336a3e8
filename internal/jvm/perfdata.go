// Package jvm reads a running HotSpot JVM without a JDK: its hsperfdata
// counters, and thread dumps over the attach protocol spoken directly (a
// jcmd fallback exists for the cases attach cannot serve).
package jvm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The hsperfdata file is the JVM's memory-mapped performance data (HotSpot
// perfMemory.hpp): a 32-byte prologue, then entries of a 20-byte header, a
// NUL-terminated name and the data. The JVM updates it while we read, so a
// reader copies it once per sample and checks every offset.

const (
	perfMagic       = 0xcafec0c0
	prologueSize    = 32
	entryHeaderSize = 20
	// maxPerfData bounds what is read: real files are 32 KiB.
	maxPerfData = 16 << 20
)

// ErrBadPerfData means the file is not hsperfdata or is corrupt.
var ErrBadPerfData = errors.New("not a valid hsperfdata file")

// PerfData is one reading of a JVM's hsperfdata.
type PerfData struct {
	Major, Minor int
	// Accessible is false while the JVM is still creating the file.
	Accessible bool
	longs      map[string]int64
	strs       map[string]string
}

// ParsePerfData parses the bytes of an hsperfdata file.
func ParsePerfData(b []byte) (*PerfData, error) {
	if len(b) < prologueSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadPerfData, len(b))
	}
	if binary.BigEndian.Uint32(b) != perfMagic {
		return nil, fmt.Errorf("%w: bad magic %#x", ErrBadPerfData, binary.BigEndian.Uint32(b))
	}
	var order binary.ByteOrder = binary.BigEndian
	if b[4] == 1 {
		order = binary.LittleEndian
	}
	p := &PerfData{Major: int(b[5]), Minor: int(b[6]), Accessible: b[7] != 0, longs: map[string]int64{}, strs: map[string]string{}}
	off := int(int32(order.Uint32(b[24:])))
	n := int(int32(order.Uint32(b[28:])))
	if off < prologueSize || off > len(b) || n < 0 {
		return nil, fmt.Errorf("%w: entries at %d, %d of them", ErrBadPerfData, off, n)
	}
	for i := 0; i < n; i++ {
		if off+entryHeaderSize > len(b) {
			break // truncated: keep what was read
		}
		e := b[off:]
		length := int(int32(order.Uint32(e[0:])))
		nameOff := int(int32(order.Uint32(e[4:])))
		vecLen := int(int32(order.Uint32(e[8:])))
		typ := e[12]
		dataOff := int(int32(order.Uint32(e[16:])))
		if length < entryHeaderSize || length > len(e) {
			break
		}
		e = e[:length]
		off += length
		if nameOff < entryHeaderSize || nameOff >= length || dataOff < entryHeaderSize || dataOff > length || vecLen < 0 {
			continue
		}
		nameEnd := bytes.IndexByte(e[nameOff:], 0)
		if nameEnd <= 0 {
			continue
		}
		name := string(e[nameOff : nameOff+nameEnd])
		data := e[dataOff:]
		switch {
		case typ == 'J' && vecLen == 0 && len(data) >= 8:
			p.longs[name] = int64(order.Uint64(data))
		case typ == 'B' && vecLen > 0:
			if vecLen < len(data) {
				data = data[:vecLen]
			}
			if z := bytes.IndexByte(data, 0); z >= 0 {
				data = data[:z]
			}
			p.strs[name] = string(data)
		}
	}
	return p, nil
}

// Long returns a counter by name.
func (p *PerfData) Long(name string) (int64, bool) {
	v, ok := p.longs[name]
	return v, ok
}

// String returns a string entry by name.
func (p *PerfData) String(name string) (string, bool) {
	v, ok := p.strs[name]
	return v, ok
}

// ticks converts high-resolution timer ticks to a duration.
func (p *PerfData) ticks(name string) time.Duration {
	v, ok := p.longs[name]
	freq := p.longs["sun.os.hrt.frequency"]
	if !ok || freq <= 0 || v < 0 {
		return 0
	}
	sec := v / freq
	rem := v % freq
	return time.Duration(sec)*time.Second + time.Duration(rem*int64(time.Second)/freq)
}

// Counters are the figures ctprof follows each tick.
type Counters struct {
	LiveThreads, DaemonThreads, PeakThreads, StartedThreads int64
	Safepoints                                              int64
	SafepointTime, SafepointSyncTime                        time.Duration
	// GCTime adds up every collector's time.
	GCTime time.Duration
	// Sync holds the sun.rt._sync_* monitor counters (JDK 8 to 21) by name
	// without the prefix.
	Sync map[string]int64
	// GCRunning is how long a collection that has not ended has run
	// (gcRunning); zero when none runs.
	GCRunning time.Duration
}

// PauseBetween is the pause a request caused the JVM between two readings
// of its counters. The application stands still from a safepoint's start:
// the threads that stop first wait while the others reach it (sync time,
// which grows when the target's threads compete for CPUs), then for the
// operation itself (safepoint time); hsperfdata counts the two apart. The
// collections the JVM ran meanwhile on its own are not the request's: a
// request that lasts seconds (a JFR start on a small, churning heap) would
// otherwise book the JVM's full GCs as ctprof's pause.
func PauseBetween(before, after Counters) time.Duration {
	d := after.SafepointTime - before.SafepointTime + after.SafepointSyncTime - before.SafepointSyncTime
	d -= max(0, after.GCTime-before.GCTime)
	return max(0, d)
}

// gcRunning reads how long the collection in progress has run. HotSpot
// sets a collector's sun.gc.collector.<n>.lastEntryTime when a
// collection begins and lastExitTime when it ends (TraceCollectorStats,
// in high-resolution ticks), and its StatSampler refreshes
// sun.os.hrt.ticks every 50 ms from the WatcherThread, which a safepoint
// does not stop: an entry after the exit is a collection still running,
// for hrt.ticks minus the entry. Newer JDKs (25) have no hrt.ticks: the
// ticks count from the JVM's start, which sun.rt.createVmBeginTime (wall
// milliseconds) gives within tens of milliseconds (measured on JDK 17,
// which has both), and the JVM's wall clock is this host's. (The
// safepoint counters tell nothing while a safepoint is being reached:
// sun.rt.safepoints and the times grow only once it ends.)
func (p *PerfData) gcRunning() time.Duration {
	freq := p.longs["sun.os.hrt.frequency"]
	now, ok := p.longs["sun.os.hrt.ticks"]
	if !ok {
		if began, ok := p.longs["sun.rt.createVmBeginTime"]; ok && began > 0 {
			now = int64(float64(time.Since(time.UnixMilli(began))) / float64(time.Second) * float64(freq))
		}
	}
	if freq <= 0 || now <= 0 {
		return 0
	}
	var longest int64
	for n := 0; n < 8; n++ {
		prefix := "sun.gc.collector." + strconv.Itoa(n) + "."
		entry, ok1 := p.longs[prefix+"lastEntryTime"]
		exit, ok2 := p.longs[prefix+"lastExitTime"]
		if !ok1 || !ok2 {
			continue
		}
		if entry > exit && now > entry {
			longest = max(longest, now-entry)
		}
	}
	return time.Duration(float64(longest) / float64(freq) * float64(time.Second))
}

// Counters extracts the counters ctprof uses.
func (p *PerfData) Counters() Counters {
	c := Counters{
		LiveThreads:       p.longs["java.threads.live"],
		DaemonThreads:     p.longs["java.threads.daemon"],
		PeakThreads:       p.longs["java.threads.livePeak"],
		StartedThreads:    p.longs["java.threads.started"],
		Safepoints:        p.longs["sun.rt.safepoints"],
		SafepointTime:     p.ticks("sun.rt.safepointTime"),
		SafepointSyncTime: p.ticks("sun.rt.safepointSyncTime"),
		GCRunning:         p.gcRunning(),
	}
	for name := range p.longs {
		switch {
		case strings.HasPrefix(name, "sun.gc.collector.") && strings.HasSuffix(name, ".time"):
			c.GCTime += p.ticks(name)
		case strings.HasPrefix(name, "sun.rt._sync_"):
			if c.Sync == nil {
				c.Sync = map[string]int64{}
			}
			c.Sync[strings.TrimPrefix(name, "sun.rt._sync_")] = p.longs[name]
		}
	}
	return c
}

// AttachSupported reads sun.rt.jvmCapabilities, whose first character is
// '1' when the JVM's attach listener may be started.
func (p *PerfData) AttachSupported() bool {
	caps, ok := p.strs["sun.rt.jvmCapabilities"]
	return ok && len(caps) > 0 && caps[0] == '1'
}
