package record

import (
	"sort"

	"github.com/ctprof/ctprof/internal/procfs"
)

// encodeUnixClients writes what format version 8 adds to the connections:
// the clients on the target's Unix sockets, by listening path, and the
// paths it listens on. Established and Inbound (written with the TCP
// counts, as ever) include those clients from version 8 on; a version 7
// file has neither, so its counts stay what that run measured.
func encodeUnixClients(e *encoder, c *procfs.Connections) {
	e.int(c.UnixEstablished)
	e.bool(c.ByPath != nil)
	paths := make([]string, 0, len(c.ByPath))
	for p := range c.ByPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	e.uvarint(uint64(len(paths)))
	for _, p := range paths {
		e.str(p) // through the string table: the same paths every tick
		e.int(c.ByPath[p])
	}
	e.bool(c.ListeningPaths != nil)
	e.strs(c.ListeningPaths)
}

// decodeUnixClients reads what encodeUnixClients wrote into c.
func decodeUnixClients(d *decoder, c *procfs.Connections) {
	c.UnixEstablished = d.int()
	if d.bool() {
		c.ByPath = map[string]int{}
	}
	n := d.count(2)
	for i := 0; i < n && d.err == nil; i++ {
		p := d.str()
		if c.ByPath == nil {
			c.ByPath = map[string]int{}
		}
		c.ByPath[p] = d.int()
	}
	hasListening := d.bool()
	c.ListeningPaths = d.strs()
	if hasListening && c.ListeningPaths == nil {
		c.ListeningPaths = []string{}
	}
}
