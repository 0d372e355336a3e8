package futextrace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tracefsDirs are where tracefs is looked for, in order: its own mount
// point, then the one under debugfs that older systems use.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// field is one field of a tracepoint's raw record, as its format file
// declares it.
type field struct {
	offset, size int
	signed       bool
}

// get reads the field from a raw record; false when the record is too
// short or the field's size is not 1, 2, 4 or 8 bytes.
func (f field) get(raw []byte) (uint64, bool) {
	if f.offset < 0 || f.size <= 0 || f.offset+f.size > len(raw) {
		return 0, false
	}
	b := raw[f.offset : f.offset+f.size]
	var v uint64
	switch f.size {
	case 1:
		v = uint64(b[0])
		if f.signed {
			v = uint64(int64(int8(b[0])))
		}
	case 2:
		u := uint16(b[0]) | uint16(b[1])<<8
		v = uint64(u)
		if f.signed {
			v = uint64(int64(int16(u)))
		}
	case 4:
		u := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		v = uint64(u)
		if f.signed {
			v = uint64(int64(int32(u)))
		}
	case 8:
		for i := 7; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
	default:
		return 0, false
	}
	return v, true
}

// tracepoint is a tracepoint's id and its raw record's fields by name.
type tracepoint struct {
	id     uint64
	fields map[string]field
}

// formats are the two futex tracepoints ctprof reads.
type formats struct {
	dir   string
	enter tracepoint
	exit  tracepoint
	// uaddr, op, val, utime in the enter record; ret in the exit one.
	uaddr, op, val, utime, ret field
	// common is the common_type field, which holds the tracepoint id.
	common field
}

// findTracefs returns the first tracefs directory holding the syscall
// tracepoints. Its errors are *Error wrapping ErrUnavailable.
func findTracefs() (formats, error) {
	var denied, mounted bool
	for _, dir := range tracefsDirs {
		_, err := os.Stat(filepath.Join(dir, "events"))
		switch {
		case err == nil:
			mounted = true
			if _, err := os.Stat(filepath.Join(dir, "events", "syscalls", "sys_enter_futex")); err != nil {
				if errors.Is(err, fs.ErrPermission) {
					denied = true
				}
				continue
			}
			f, err := readFormats(dir)
			if err != nil {
				if errors.Is(err, fs.ErrPermission) {
					denied = true
					continue
				}
				return formats{}, unavailable(ReasonNoTracepoint, "the futex tracepoints in %s cannot be read: %v", dir, err)
			}
			return f, nil
		case errors.Is(err, fs.ErrPermission):
			denied = true
		}
	}
	switch {
	case denied:
		return formats{}, errNoPrivilege()
	case mounted:
		return formats{}, unavailable(ReasonNoTracepoint, "the kernel has no syscalls:sys_enter_futex tracepoint (it was built without CONFIG_FTRACE_SYSCALLS); exact futex waits need it")
	}
	return formats{}, unavailable(ReasonNoTracefs, "tracefs is not mounted; mount it with: mount -t tracefs nodev /sys/kernel/tracing")
}

func readFormats(dir string) (formats, error) {
	f := formats{dir: dir}
	var err error
	if f.enter, err = readTracepoint(filepath.Join(dir, "events", "syscalls", "sys_enter_futex")); err != nil {
		return f, err
	}
	if f.exit, err = readTracepoint(filepath.Join(dir, "events", "syscalls", "sys_exit_futex")); err != nil {
		return f, err
	}
	var ok bool
	for _, want := range []struct {
		tp   tracepoint
		name string
		dst  *field
	}{{f.enter, "uaddr", &f.uaddr}, {f.enter, "op", &f.op}, {f.enter, "val", &f.val}, {f.enter, "utime", &f.utime}, {f.exit, "ret", &f.ret}, {f.enter, "common_type", &f.common}} {
		if *want.dst, ok = want.tp.fields[want.name]; !ok {
			return f, fmt.Errorf("the tracepoint's format has no field %q", want.name)
		}
	}
	if c, ok := f.exit.fields["common_type"]; !ok || c != f.common {
		return f, fmt.Errorf("the enter and exit tracepoints' common_type fields differ")
	}
	return f, nil
}

// readTracepoint reads a tracepoint directory's id and format files.
func readTracepoint(dir string) (tracepoint, error) {
	b, err := os.ReadFile(filepath.Join(dir, "id"))
	if err != nil {
		return tracepoint{}, err
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return tracepoint{}, fmt.Errorf("%s/id: %v", dir, err)
	}
	b, err = os.ReadFile(filepath.Join(dir, "format"))
	if err != nil {
		return tracepoint{}, err
	}
	fields, err := parseFormat(b)
	if err != nil {
		return tracepoint{}, fmt.Errorf("%s/format: %v", dir, err)
	}
	return tracepoint{id: id, fields: fields}, nil
}

// parseFormat reads a tracepoint's format file: lines such as
//
//	field:u32 * uaddr;	offset:16;	size:8;	signed:0;
//
// give the raw record's fields by name.
func parseFormat(b []byte) (map[string]field, error) {
	fields := map[string]field{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		var name string
		f := field{offset: -1}
		for _, part := range strings.Split(line, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
			if !ok {
				continue
			}
			switch k {
			case "field":
				decl := strings.Fields(v)
				if len(decl) == 0 {
					continue
				}
				name = strings.TrimLeft(decl[len(decl)-1], "*")
				if i := strings.IndexByte(name, '['); i >= 0 {
					name = name[:i]
				}
			case "offset":
				f.offset, _ = strconv.Atoi(v)
			case "size":
				f.size, _ = strconv.Atoi(v)
			case "signed":
				f.signed = v == "1"
			}
		}
		if name != "" && f.offset >= 0 && f.size > 0 {
			fields[name] = f
		}
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("no fields")
	}
	return fields, nil
}
