package procfs

import (
	"bufio"
	"bytes"
	"fmt"

	"github.com/ctprof/ctprof/internal/symbolize"
)

// Maps reads /proc/<pid>/maps.
func (f FS) Maps(pid int) ([]symbolize.Mapping, error) {
	path := f.pidPath(pid, "maps")
	b, err := f.readFile(path)
	if err != nil {
		return nil, err
	}
	return parseMaps(b)
}

func parseMaps(b []byte) ([]symbolize.Mapping, error) {
	var out []symbolize.Mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		m, ok := parseMapsLine(sc.Bytes())
		if !ok {
			return out, fmt.Errorf("maps line %d: cannot parse %q", line, truncateBytes(sc.Bytes(), 80))
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// parseMapsLine parses "start-end perms offset dev inode   path".
func parseMapsLine(l []byte) (symbolize.Mapping, bool) {
	var m symbolize.Mapping
	fields := [5][]byte{}
	rest := l
	for i := 0; i < 5; i++ {
		rest = bytes.TrimLeft(rest, " ")
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			if i < 4 {
				return m, false
			}
			j = len(rest)
		}
		fields[i], rest = rest[:j], rest[j:]
	}
	dash := bytes.IndexByte(fields[0], '-')
	if dash < 0 || len(fields[1]) < 4 {
		return m, false
	}
	m.Start, m.End = hexu(fields[0][:dash]), hexu(fields[0][dash+1:])
	m.Perms = permsString(fields[1])
	m.Offset = hexu(fields[2])
	if colon := bytes.IndexByte(fields[3], ':'); colon > 0 {
		m.DevMajor, m.DevMinor = uint32(hexu(fields[3][:colon])), uint32(hexu(fields[3][colon+1:]))
	}
	m.Inode = atou(fields[4])
	m.Path = string(bytes.TrimSpace(rest))
	return m, m.End > m.Start
}

func truncateBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// permsString returns the common permission strings without allocating:
// a JVM with 10,000 threads has 20,000 mappings, nearly all of a handful of
// kinds.
func permsString(b []byte) string {
	switch string(b) {
	case "---p":
		return "---p"
	case "r--p":
		return "r--p"
	case "rw-p":
		return "rw-p"
	case "r-xp":
		return "r-xp"
	case "rwxp":
		return "rwxp"
	case "rw-s":
		return "rw-s"
	case "r--s":
		return "r--s"
	}
	return string(b)
}
