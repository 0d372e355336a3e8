package cli

import (
	"errors"
	"io/fs"

	"github.com/ctprof/ctprof/pkg/threaddump"
)

// hintFor suggests what to do about an error, when there is something
// useful to say.
func hintFor(err error) string {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return "run as the file's owner or root"
	case errors.Is(err, fs.ErrNotExist):
		return "check the path; use - to read standard input"
	case errors.Is(err, threaddump.ErrNoThreadDump):
		return "take one with `jcmd <pid> Thread.print -l > dump.txt` (or jstack -l <pid>)"
	case errors.Is(err, threaddump.ErrUnsupportedFormat):
		return "ctprof reads HotSpot (jstack, jcmd, kill -3), jcmd Thread.dump_to_file and OpenJ9 javacore dumps"
	}
	return ""
}
