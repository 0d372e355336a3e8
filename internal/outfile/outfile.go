// Package outfile writes the files a run produces besides the summary it
// prints (the HTML report and the profile exports), each whole or not at
// all, and checks before any work that none of them would replace an input,
// the recording or another output. analyze, attach, report and the other
// commands share it, so every mode writes the same files from the same
// Aggregator.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/ctprof/ctprof/internal/analysis"
	"github.com/ctprof/ctprof/internal/report"
)

// Files are the files a run writes besides its summary; "" for none.
type Files struct {
	HTML       string
	Pprof      string
	Folded     string
	Speedscope string
}

// ConflictError is a request Check refuses as given (an output on an
// input, two outputs on one path): the command line must change.
type ConflictError struct{ msg string }

func (e *ConflictError) Error() string { return e.msg }

func conflictf(format string, a ...any) error { return &ConflictError{fmt.Sprintf(format, a...)} }

// list pairs each requested file with what it is.
func (o *Files) list() [][2]string {
	var l [][2]string
	for _, x := range [][2]string{{"HTML report", o.HTML}, {"pprof profile", o.Pprof}, {"folded stacks", o.Folded}, {"speedscope profile", o.Speedscope}} {
		if x[1] != "" {
			l = append(l, x)
		}
	}
	return l
}

// Check runs before any work: an output that would replace one of the
// inputs or the recording, two outputs on one path, or a directory that
// cannot take the file, should stop an hour-long attach at its start, not
// at its end (and never destroy the dump or recording being read).
// inputs are the files the run reads ("-" is standard input, not a file);
// recording is the file attach --record appends to ("" for none).
func (o *Files) Check(inputs []string, recording string) error {
	type claim struct{ what, path string }
	seen := map[fileKey]claim{}
	for _, in := range inputs {
		if in == "-" || in == "" {
			continue
		}
		k, err := keyOf(in)
		if err != nil {
			return conflictf("input %q: %v", in, err)
		}
		seen[k] = claim{"input", in}
	}
	if recording != "" {
		k, err := keyOf(recording)
		if err != nil {
			return conflictf("recording path %q: %v", recording, err)
		}
		if prev, ok := seen[k]; ok {
			return conflictf("the recording %s is the %s %s: choose another --record file", recording, prev.what, prev.path)
		}
		seen[k] = claim{"recording", recording}
	}
	for _, x := range o.list() {
		k, err := keyOf(x[1])
		if err != nil {
			return conflictf("%s path %q: %v", x[0], x[1], err)
		}
		if prev, ok := seen[k]; ok {
			if prev.what == "input" || prev.what == "recording" {
				return conflictf("the %s would replace the %s %s: choose another file", x[0], prev.what, prev.path)
			}
			return conflictf("the %s and the %s would both be written to %s", prev.what, x[0], x[1])
		}
		seen[k] = claim{x[0], x[1]}
		if st, err := os.Stat(x[1]); err == nil && st.IsDir() {
			return fmt.Errorf("cannot write the %s to %s: it is a directory", x[0], x[1])
		}
		abs, _ := filepath.Abs(x[1]) // keyOf succeeded, so this does
		probe, err := os.CreateTemp(filepath.Dir(abs), ".ctprof-probe-*")
		if err != nil {
			return fmt.Errorf("cannot write the %s to %s: %w", x[0], x[1], err)
		}
		probe.Close()
		os.Remove(probe.Name())
	}
	return nil
}

// fileKey names a file the way the kernel does: by device and inode when
// it exists, so ./a, a, a hard link to a and a symlink to a are one file;
// by its cleaned absolute path when it does not exist yet.
type fileKey struct {
	dev, ino uint64
	path     string
}

func keyOf(path string) (fileKey, error) {
	if st, err := os.Stat(path); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			return fileKey{dev: uint64(sys.Dev), ino: sys.Ino}, nil
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fileKey{}, err
	}
	// A new file in a directory reached through a symlink is still one
	// path: resolve what exists of it.
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	return fileKey{path: abs}, nil
}

// Write writes every requested file from the Aggregator. One that fails
// does not stop the others; the error names each failure.
func (o *Files) Write(w io.Writer, agg *analysis.Aggregator, sources []string) error {
	l := o.list()
	if len(l) == 0 {
		return nil
	}
	s := agg.Summary()
	stacks := agg.Stacks()
	waitStacks := agg.WaitStacks()
	var errs []error
	for _, x := range l {
		var err error
		switch x[0] {
		case "HTML report":
			err = WriteAtomic(x[1], func(f io.Writer) error {
				return report.HTML(f, report.HTMLInput{Summary: s, Stacks: stacks, WaitStacks: waitStacks, Sources: sources, Generated: time.Now()})
			})
		case "pprof profile":
			err = WriteAtomic(x[1], func(f io.Writer) error { return report.Pprof(f, pprofInput(s, stacks, waitStacks)) })
		case "folded stacks":
			err = WriteAtomic(x[1], func(f io.Writer) error { return report.Folded(f, stacks) })
		case "speedscope profile":
			err = WriteAtomic(x[1], func(f io.Writer) error { return report.Speedscope(f, profileName(s, sources), stacks) })
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", x[0], err))
			continue
		}
		fmt.Fprintf(w, "ctprof: wrote the %s to %s\n", x[0], x[1])
		if len(stacks) == 0 && x[0] != "HTML report" && !(x[0] == "pprof profile" && len(waitStacks) > 0) {
			fmt.Fprintf(w, "ctprof: note: the %s has no stacks: no thread dump was taken, and no native thread was seen blocked in a system call with a stack ctprof could read\n", x[0])
		}
	}
	return errors.Join(errs...)
}

func profileName(s *analysis.Summary, sources []string) string {
	if t := s.Target; t != nil {
		return fmt.Sprintf("ctprof: pid %d (%s)", t.PID, t.Name)
	}
	return "ctprof: " + strings.Join(sources, ", ")
}

// WriteAtomic writes path through a temporary file in the same directory,
// renamed into place once complete: a failed write or a Ctrl-C never
// leaves half a report, and an older report stays until a new one exists.
func WriteAtomic(path string, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if err := fill(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// pprofInput is what the pprof profile of a run holds.
func pprofInput(s *analysis.Summary, stacks []*analysis.FoldedStack, waitStacks []*analysis.WaitStack) report.PprofInput {
	in := report.PprofInput{Stacks: stacks, WaitStacks: waitStacks, Locks: s.Locks, Interval: s.DumpInterval(), Duration: time.Duration(s.DurationSeconds * float64(time.Second))}
	if s.FirstDump != nil {
		in.Start = *s.FirstDump
	}
	return in
}

// Pprof is the pprof profile of everything agg holds, as --pprof writes
// it (the OTLP export sends it too).
func Pprof(agg *analysis.Aggregator) (*profile.Profile, error) {
	return report.PprofProfile(pprofInput(agg.MetricsSummary(), agg.Stacks(), agg.WaitStacks()))
}
