package symbolize

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path"
	"strings"
	"sync/atomic"

	"github.com/ulikunitz/xz"
)

// Debug files found by other means than the build-id directory: a
// binary's .gnu_debuglink (a file name and the file's CRC, looked for
// beside the binary, in its .debug/ and under /usr/lib/debug), its
// MiniDebugInfo (Fedora's .gnu_debugdata: an xz-compressed ELF holding
// the function symbols a stripped binary lacks), and a debuginfod server
// (DEBUGINFOD_URLS, fetched in the background: see SetDebuginfod).

// debugLink reads a binary's .gnu_debuglink: the debug file's name and
// the CRC-32 of its contents. The name comes from the target: only a plain
// file name is taken.
func debugLink(f *elf.File) (name string, crc uint32, ok bool) {
	sec := f.Section(".gnu_debuglink")
	if sec == nil || sec.Size < 8 || sec.Size > 4096 {
		return "", 0, false
	}
	b, err := sec.Data()
	if err != nil {
		return "", 0, false
	}
	return parseDebugLink(b, f.ByteOrder.Uint32)
}

// parseDebugLink parses a .gnu_debuglink section: the name, NUL, padding
// to 4 bytes, then the CRC in the binary's byte order.
func parseDebugLink(b []byte, u32 func([]byte) uint32) (name string, crc uint32, ok bool) {
	n := bytes.IndexByte(b, 0)
	if n <= 0 {
		return "", 0, false
	}
	name = string(b[:n])
	off := (n + 4) &^ 3
	if off+4 > len(b) || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return "", 0, false
	}
	return name, u32(b[off : off+4]), true
}

// maxDebugLinkCRCBytes bounds the file whose CRC is computed to accept a
// debug file that has no build-id of its own to compare.
const maxDebugLinkCRCBytes = 512 << 20

// openDebugLink opens the debug file a binary at binPath (as the target
// sees it) names in its .gnu_debuglink, where gdb looks for it: beside the
// binary, in its .debug/, and under /usr/lib/debug/<its directory>. A file
// is taken only if its build-id is the binary's (id), or, when it has
// none, its CRC matches.
func openDebugLink(proc Process, f *elf.File, binPath, id string) (*os.File, *elf.File) {
	name, crc, ok := debugLink(f)
	if !ok || !strings.HasPrefix(binPath, "/") {
		return nil, nil
	}
	dir := strings.TrimPrefix(path.Dir(binPath), "/")
	for _, p := range []string{path.Join(dir, name), path.Join(dir, ".debug", name), path.Join("usr/lib/debug", dir, name)} {
		if p == strings.TrimPrefix(binPath, "/") {
			continue // the binary itself
		}
		file := proc.OpenInRoot(p)
		if file == nil {
			continue
		}
		df, err := elf.NewFile(file)
		if err == nil && debugFileMatches(file, df, id, crc) {
			return file, df
		}
		file.Close()
	}
	return nil, nil
}

// debugFileMatches says a debug file is the binary's: the same build-id,
// or, without one, the CRC its .gnu_debuglink gives.
func debugFileMatches(file *os.File, df *elf.File, id string, crc uint32) bool {
	if did := BuildID(df); did != "" || id != "" {
		return did == id
	}
	st, err := file.Stat()
	if err != nil || st.Size() > maxDebugLinkCRCBytes {
		return false
	}
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, io.NewSectionReader(file, 0, st.Size())); err != nil {
		return false
	}
	return h.Sum32() == crc
}

// maxMiniDebugInfoBytes bounds the ELF a .gnu_debugdata section
// decompresses to (Fedora's are tens to hundreds of KiB).
const maxMiniDebugInfoBytes = 64 << 20

// miniDebugInfo decompresses a binary's .gnu_debugdata (xz) into the ELF
// it holds; nil when it has none or it is not sound.
func miniDebugInfo(f *elf.File) (*bytes.Reader, *elf.File) {
	sec := f.Section(".gnu_debugdata")
	if sec == nil || sec.Size == 0 || sec.Size > maxMiniDebugInfoBytes {
		return nil, nil
	}
	b, err := sec.Data()
	if err != nil {
		return nil, nil
	}
	return parseMiniDebugInfo(b)
}

// parseMiniDebugInfo decompresses xz data into an ELF file, within
// maxMiniDebugInfoBytes.
func parseMiniDebugInfo(b []byte) (*bytes.Reader, *elf.File) {
	zr, err := xz.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, nil
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxMiniDebugInfoBytes+1))
	if err != nil || len(out) > maxMiniDebugInfoBytes {
		return nil, nil
	}
	r := bytes.NewReader(out)
	df, err := elf.NewFile(r)
	if err != nil {
		return nil, nil
	}
	return r, df
}

// DebugFetcher fetches debug files by build-id in the background
// (internal/debuginfod's Client). procfs names only this interface: it
// must not import the network (package jvm imports procfs, and the early
// dump's initializer must not wait behind net's: see
// TestEarlyDumpInitializesBeforeTheRest).
type DebugFetcher interface {
	// Lookup returns the path of the debug file of build-id id once it is
	// there, and starts fetching it otherwise.
	Lookup(id string) (string, bool)
	// Failed is why a fetch ended without a file; nil otherwise.
	Failed(id string) error
}

type fetcherBox struct{ f DebugFetcher }

// debuginfodClient fetches debug files by build-id when DEBUGINFOD_URLS
// is set in ctprof's environment (nil otherwise); set once at start.
var debuginfodClient atomic.Pointer[fetcherBox]

// SetDebuginfod makes unwinders and symbolizers ask f for the debug files
// of binaries without symbols (nil: none).
func SetDebuginfod(f DebugFetcher) {
	if f == nil {
		debuginfodClient.Store(nil)
		return
	}
	debuginfodClient.Store(&fetcherBox{f})
}

// fetcher is the DebugFetcher set, nil when none.
func fetcher() DebugFetcher {
	if b := debuginfodClient.Load(); b != nil {
		return b.f
	}
	return nil
}

// fetched is the path of the debug file of id if the fetcher has it.
func fetched(id string) (string, bool) {
	if f := fetcher(); f != nil {
		return f.Lookup(id)
	}
	return "", false
}

// VerifyDebugFile checks that the file at p is an ELF debug file of
// build-id id with a symbol table: a debuginfod server's answer is kept
// only then.
func VerifyDebugFile(p, id string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("not an ELF file: %w", err)
	}
	defer f.Close()
	if got := BuildID(f); got != id {
		return fmt.Errorf("its build-id is %q", got)
	}
	if !hasSymtab(f) {
		return errors.New("it has no symbol table")
	}
	return nil
}

// openFetchedDebugFile opens the debug file debuginfod fetched for id
// (from the client's cache, outside the target's reach), checked again.
func openFetchedDebugFile(p, id string) (*os.File, *elf.File) {
	file, err := os.Open(p)
	if err != nil {
		return nil, nil
	}
	return debugFileOf(file, id)
}
