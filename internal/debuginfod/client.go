// Package debuginfod fetches the debug files of stripped binaries by their
// GNU build-id from the servers that DEBUGINFOD_URLS names, as gdb, perf,
// eu-stack and pprof do, into the same cache (elfutils' layout:
// <cache>/<build-id>/debuginfo), so that a file one tool fetched serves the
// others.
//
// Fetches run in the background: a sample never waits for a server. A
// caller asks with Lookup, which answers from the cache or starts a fetch,
// and asks again later (names improve once the file arrives). A fetched
// file is kept only if the caller's Verify accepts it (its build-id must be
// the one asked for: nothing that does not match is trusted), and only up
// to MaxSize bytes. Only ctprof's own environment is read, never the
// target's.
package debuginfod

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a Client.
type Options struct {
	// URLs are the servers, tried in order.
	URLs []string
	// CacheDir holds <build-id>/debuginfo.
	CacheDir string
	// Timeout is how long a transfer may go without a byte (the first
	// one included) before it is given up.
	Timeout time.Duration
	// MaxSize bounds a debug file; a larger one is refused.
	MaxSize int64
	// Verify checks a downloaded file (at path) is the debug file of
	// build-id id; a file it refuses is deleted.
	Verify func(path, id string) error
	// Parallel bounds the fetches running at once.
	Parallel int
}

// Defaults, as elfutils' client has them where it has one.
const (
	DefaultTimeout  = 90 * time.Second
	DefaultMaxSize  = 1 << 30
	defaultParallel = 2
)

// OptionsFromEnv reads DEBUGINFOD_URLS (space-separated), DEBUGINFOD_CACHE_PATH
// (else $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client),
// DEBUGINFOD_TIMEOUT (seconds) and DEBUGINFOD_MAXSIZE (bytes) from getenv;
// ok is false when no server is named.
func OptionsFromEnv(getenv func(string) string) (o Options, ok bool) {
	for _, u := range strings.Fields(getenv("DEBUGINFOD_URLS")) {
		if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
			o.URLs = append(o.URLs, strings.TrimRight(u, "/"))
		}
	}
	if len(o.URLs) == 0 {
		return o, false
	}
	switch {
	case getenv("DEBUGINFOD_CACHE_PATH") != "":
		o.CacheDir = getenv("DEBUGINFOD_CACHE_PATH")
	case getenv("XDG_CACHE_HOME") != "":
		o.CacheDir = filepath.Join(getenv("XDG_CACHE_HOME"), "debuginfod_client")
	case getenv("HOME") != "":
		o.CacheDir = filepath.Join(getenv("HOME"), ".cache", "debuginfod_client")
	default:
		return o, false
	}
	o.Timeout = DefaultTimeout
	if s, err := strconv.Atoi(getenv("DEBUGINFOD_TIMEOUT")); err == nil && s > 0 {
		o.Timeout = time.Duration(s) * time.Second
	}
	o.MaxSize = DefaultMaxSize
	if n, err := strconv.ParseInt(getenv("DEBUGINFOD_MAXSIZE"), 10, 64); err == nil && n > 0 {
		o.MaxSize = n
	}
	return o, true
}

// Client fetches debug files; safe for concurrent use.
type Client struct {
	opts  Options
	http  *http.Client
	sem   chan struct{}
	mu    sync.Mutex
	state map[string]*fetch
	wg    sync.WaitGroup
	ctx   context.Context
	stop  context.CancelFunc
}

type fetch struct {
	done bool
	path string
	err  error
}

// New returns a client for o.
func New(o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.Parallel <= 0 {
		o.Parallel = defaultParallel
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Client{
		opts: o,
		// No ResponseHeaderTimeout: downloadFrom's idle timer bounds the
		// wait for the headers too, and one clock says which it was (two
		// of the same length raced, and a loaded machine got the
		// transport's message instead of "no answer within").
		http:  &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}},
		sem:   make(chan struct{}, o.Parallel),
		state: map[string]*fetch{},
		ctx:   ctx,
		stop:  stop,
	}
}

// buildIDRE is what a build-id may be: the hex of its bytes. Anything else
// (it comes from the target's binaries) is never put in a path or a URL.
var buildIDRE = regexp.MustCompile(`^[0-9a-f]{8,128}$`)

// Lookup returns the path of the debug file of build-id id when it is in
// the cache (fetched before, by ctprof or another debuginfod client);
// otherwise it starts fetching it in the background (once per id) and
// returns false: ask again later.
func (c *Client) Lookup(id string) (string, bool) {
	if c == nil || !buildIDRE.MatchString(id) {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.state[id]; f != nil {
		return f.path, f.done && f.err == nil
	}
	f := &fetch{}
	c.state[id] = f
	if p := c.cachePath(id); c.cached(p, id) {
		f.done, f.path = true, p
		return p, true
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		select {
		case c.sem <- struct{}{}:
		case <-c.ctx.Done():
			c.finish(f, "", c.ctx.Err())
			return
		}
		defer func() { <-c.sem }()
		p, err := c.download(id)
		c.finish(f, p, err)
	}()
	return "", false
}

func (c *Client) finish(f *fetch, path string, err error) {
	c.mu.Lock()
	f.done, f.path, f.err = true, path, err
	c.mu.Unlock()
}

// Wait waits for the fetches under way (tests, and a run's end).
func (c *Client) Wait() {
	if c != nil {
		c.wg.Wait()
	}
}

// Close stops the fetches under way and waits for them.
func (c *Client) Close() {
	if c != nil {
		c.stop()
		c.wg.Wait()
	}
}

// Failed is why the fetch of id ended without a file; nil while it runs,
// after it succeeded, or when it was never asked.
func (c *Client) Failed(id string) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.state[id]; f != nil && f.done {
		return f.err
	}
	return nil
}

// Failure is a build-id whose debug file could not be had, and why.
type Failure struct {
	ID  string
	Err error
}

// Failures lists the fetches that ended without a file, by build-id.
func (c *Client) Failures() []Failure {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Failure
	for id, f := range c.state {
		if f.done && f.err != nil {
			out = append(out, Failure{ID: id, Err: f.err})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Pending counts the fetches not finished yet.
func (c *Client) Pending() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, f := range c.state {
		if !f.done {
			n++
		}
	}
	return n
}

func (c *Client) cachePath(id string) string {
	return filepath.Join(c.opts.CacheDir, id, "debuginfo")
}

// cached says the cache holds a regular file for id that Verify accepts
// (not a link: the cache is ours, and nothing in it is followed).
func (c *Client) cached(p, id string) bool {
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 || st.Size() > c.opts.MaxSize {
		return false
	}
	return c.opts.Verify == nil || c.opts.Verify(p, id) == nil
}

// ErrTooLarge is a debug file above the size bound.
var ErrTooLarge = errors.New("larger than the bound on a debug file")

// download tries each server in turn and puts the first good file in the
// cache; the error is the last server's.
func (c *Client) download(id string) (string, error) {
	var last error
	for _, u := range c.opts.URLs {
		p, err := c.downloadFrom(u, id)
		if err == nil {
			return p, nil
		}
		last = fmt.Errorf("%s: %w", u, err)
		if c.ctx.Err() != nil {
			break
		}
	}
	return "", last
}

func (c *Client) downloadFrom(base, id string) (string, error) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/buildid/"+id+"/debuginfo", nil)
	if err != nil {
		return "", err
	}
	// A transfer that goes Timeout without a byte is given up, as
	// elfutils' DEBUGINFOD_TIMEOUT does; a slow but moving one goes on.
	idle := time.AfterFunc(c.opts.Timeout, cancel)
	defer idle.Stop()
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil && c.ctx.Err() == nil {
			return "", fmt.Errorf("no answer within %s", c.opts.Timeout)
		}
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s", resp.Status)
	}
	if resp.ContentLength > c.opts.MaxSize {
		return "", fmt.Errorf("%d bytes: %w (%d)", resp.ContentLength, ErrTooLarge, c.opts.MaxSize)
	}
	dir := filepath.Join(c.opts.CacheDir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("cache directory %s is not a directory", dir)
	}
	tmp, err := os.CreateTemp(dir, ".debuginfo.*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	n, err := io.Copy(tmp, &progressReader{r: io.LimitReader(resp.Body, c.opts.MaxSize+1), idle: idle, timeout: c.opts.Timeout})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil && ctx.Err() != nil && c.ctx.Err() == nil:
		return "", fmt.Errorf("no byte for %s after %d bytes", c.opts.Timeout, n)
	case err != nil:
		return "", err
	case n > c.opts.MaxSize:
		return "", fmt.Errorf("over %d bytes: %w", c.opts.MaxSize, ErrTooLarge)
	case n == 0:
		return "", errors.New("an empty answer")
	}
	if c.opts.Verify != nil {
		if err := c.opts.Verify(tmp.Name(), id); err != nil {
			return "", fmt.Errorf("the file it sent is not the debug file of build-id %s: %w", id, err)
		}
	}
	p := c.cachePath(id)
	if err := os.Rename(tmp.Name(), p); err != nil {
		return "", err
	}
	return p, nil
}

// progressReader pushes the idle deadline back at every byte read.
type progressReader struct {
	r       io.Reader
	idle    *time.Timer
	timeout time.Duration
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.idle.Reset(p.timeout)
	}
	return n, err
}
