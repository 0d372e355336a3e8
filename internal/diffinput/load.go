// Package diffinput reads the runs ctprof diff compares: a JSON summary or
// scale document ctprof wrote, told by content, or anything ctprof analyze
// reads, drained through one Aggregator. It is apart from internal/diff so
// that the comparison, and the report that draws it, link no input reader.
package diffinput

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/diff"
	"github.com/ctprof/ctprof/internal/source"
)

// LoadOptions tune how a side is read.
type LoadOptions struct {
	// Level picks the level of a scale document; 0 takes the highest.
	Level int
}

// Load reads one side: a JSON summary or scale document ctprof wrote (told
// by content), or anything `ctprof analyze` reads, through one Aggregator.
// name may be a file, source.StdinName, or a directory, whose files are
// read in name order as one series (a run's dumps, one file each).
func Load(ctx context.Context, name string, stdin io.Reader, opt LoadOptions) (*diff.Side, error) {
	display := name
	if name == source.StdinName {
		display = "standard input"
	}
	files, err := inputFiles(name)
	if err != nil {
		return nil, err
	}
	if len(files) == 1 {
		doc, err := sniffDocument(files[0], stdin)
		if err != nil {
			return nil, err
		}
		switch {
		case doc != nil && doc.rest != nil:
			// sniffDocument read standard input to tell; what it read
			// is the input.
			stdin = doc.rest
		case doc != nil:
			side, err := doc.side(display, opt)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", display, err)
			}
			return side, nil
		}
	}
	agg := analysis.New()
	total := 0
	for _, f := range files {
		src, err := source.Open(f, stdin)
		if err != nil {
			return nil, err
		}
		n, err := agg.Drain(ctx, src, nil)
		src.Close()
		total += n
		if err != nil {
			return nil, err
		}
	}
	if total == 0 {
		return nil, fmt.Errorf("%s: no thread dump, recording or JFR wait in it", display)
	}
	return &diff.Side{Name: display, Kind: "profile", Summary: agg.Summary(), Stacks: agg.Stacks()}, nil
}

// inputFiles lists what name stands for: itself, or a directory's regular
// files (not hidden ones) in name order.
func inputFiles(name string) ([]string, error) {
	if name == source.StdinName {
		return []string{name}, nil
	}
	st, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	if !st.IsDir() {
		return []string{name}, nil
	}
	entries, err := os.ReadDir(name)
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", name, err)
	}
	var files []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		files = append(files, filepath.Join(name, e.Name()))
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: the directory holds no files", name)
	}
	sort.Strings(files)
	return files, nil
}

// document is a JSON document ctprof wrote, as far as a side needs it.
type document struct {
	summary *analysis.Summary
	scale   *scaleDocument
	// rest is standard input again from its start, when it was read to
	// tell what it is and it is not a document.
	rest io.Reader
}

// scaleDocument is the part of `ctprof scale --format json` a side reads:
// each level's throughput and profile. (The scale package's own type is
// not imported: a side needs two of its fields, and scale links the
// sampler.)
type scaleDocument struct {
	Throughput string `json:"throughput_source"`
	Levels     []struct {
		N          int     `json:"n"`
		Throughput float64 `json:"throughput"`
	} `json:"levels"`
	Summaries []*analysis.Summary `json:"summaries"`
}

// maxSummaryBytes bounds a JSON summary read whole: a summary is bounded
// (tables capped, timelines downsampled), a few megabytes at most.
const maxSummaryBytes = 256 << 20

// sniffDocument tells a JSON summary or scale document from the other
// inputs by content: a JSON object whose top-level keys are a summary's
// ("schema" with "samples") or a scale run's ("levels" with "fit"), in
// any order (jq -S sorts them). A thread dump in JSON (Thread.dump_to_file)
// has "threadDump" first and is left to the dump reader, as is anything
// not JSON: sniffDocument returns nil for those, and for standard input
// a document whose rest replays what was read.
func sniffDocument(name string, stdin io.Reader) (*document, error) {
	var r io.Reader
	if name == source.StdinName {
		r = stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", name, err)
		}
		defer f.Close()
		r = f
	}
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(64 << 10)
	var rest io.Reader = br
	isSummary, isScale := false, false
	if trimmed := bytes.TrimLeft(head, " \t\r\n\ufeff"); len(trimmed) > 0 && trimmed[0] == '{' {
		// What the key scan reads is kept, so the input can be read
		// again from its start.
		var seen bytes.Buffer
		keys := topLevelKeys(io.TeeReader(io.LimitReader(br, maxSummaryBytes+1), &seen))
		rest = io.MultiReader(&seen, br)
		isSummary = keys["schema"] && keys["samples"]
		isScale = keys["levels"] && keys["fit"]
	}
	if !isSummary && !isScale {
		if name == source.StdinName {
			return &document{rest: rest}, nil
		}
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(rest, maxSummaryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(body) > maxSummaryBytes {
		return nil, fmt.Errorf("%s: a JSON summary larger than %d MiB is not one ctprof wrote", name, maxSummaryBytes>>20)
	}
	if isScale {
		var d scaleDocument
		if err := json.Unmarshal(body, &d); err != nil {
			return nil, fmt.Errorf("%s: not a scale document ctprof wrote: %w", name, err)
		}
		return &document{scale: &d}, nil
	}
	var sum analysis.Summary
	if err := json.Unmarshal(body, &sum); err != nil {
		return nil, fmt.Errorf("%s: not a summary ctprof wrote: %w", name, err)
	}
	if sum.Schema != analysis.SchemaVersion {
		return nil, fmt.Errorf("%s: summary schema %d; this ctprof reads schema %d", name, sum.Schema, analysis.SchemaVersion)
	}
	return &document{summary: &sum}, nil
}

// topLevelKeys reads the keys of the JSON object r starts with, skipping
// their values, until the keys tell what the document is: "threadDump"
// (a dump's first key), a summary's or a scale run's pair; or the object
// ends or stops being JSON.
func topLevelKeys(r io.Reader) map[string]bool {
	keys := map[string]bool{}
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return keys
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, ok := t.(string)
		if !ok {
			return keys
		}
		keys[k] = true
		if k == "threadDump" || keys["schema"] && keys["samples"] || keys["levels"] && keys["fit"] {
			return keys
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

// side makes the Side of a document.
func (d *document) side(name string, opt LoadOptions) (*diff.Side, error) {
	if d.summary != nil {
		return &diff.Side{Name: name, Kind: "summary", Summary: d.summary}, nil
	}
	sc := d.scale
	if len(sc.Levels) == 0 || len(sc.Summaries) != len(sc.Levels) {
		return nil, errors.New("the scale document has no level with its profile (scale --format json keeps them)")
	}
	pick := -1
	for i, lv := range sc.Levels {
		if opt.Level == 0 && (pick < 0 || lv.N > sc.Levels[pick].N) || opt.Level != 0 && lv.N == opt.Level {
			pick = i
		}
	}
	if pick < 0 {
		var have []string
		for _, lv := range sc.Levels {
			have = append(have, fmt.Sprint(lv.N))
		}
		return nil, fmt.Errorf("no level %d in the scale document (it has %s)", opt.Level, strings.Join(have, ", "))
	}
	if sc.Summaries[pick] == nil {
		return nil, fmt.Errorf("level %d of the scale document has no profile", sc.Levels[pick].N)
	}
	tp := sc.Levels[pick].Throughput
	return &diff.Side{Name: name, Kind: "scale", Summary: sc.Summaries[pick], Throughput: &tp, Level: sc.Levels[pick].N}, nil
}
