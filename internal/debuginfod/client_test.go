package debuginfod

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testID = "0123456789abcdef0123456789abcdef01234567"

// verifyPrefix accepts a file that begins with "debug file of <id>", as a
// stand-in for the ELF build-id check symbolize.VerifyDebugFile makes.
func verifyPrefix(p, id string) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(b, []byte("debug file of "+id)) {
		return errors.New("another build's")
	}
	return nil
}

func client(t *testing.T, urls ...string) *Client {
	t.Helper()
	c := New(Options{URLs: urls, CacheDir: t.TempDir(), Timeout: 500 * time.Millisecond, MaxSize: 1 << 20, Verify: verifyPrefix})
	t.Cleanup(c.Close)
	return c
}

// lookupAfterFetch asks once, waits for the background fetch, and asks
// again.
func lookupAfterFetch(t *testing.T, c *Client, id string) (string, bool) {
	t.Helper()
	if p, ok := c.Lookup(id); ok {
		return p, ok
	}
	c.Wait()
	return c.Lookup(id)
}

func TestFetchesIntoTheCacheAndAnswersFromIt(t *testing.T) {
	var asked int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked++
		assert.Equal(t, "/buildid/"+testID+"/debuginfo", r.URL.Path)
		_, _ = w.Write([]byte("debug file of " + testID))
	}))
	defer srv.Close()
	c := client(t, "http://127.0.0.1:1", srv.URL) // the first server is down: the next one answers
	p, ok := lookupAfterFetch(t, c, testID)
	require.True(t, ok, "failures: %v", c.Failures())
	assert.Equal(t, filepath.Join(c.opts.CacheDir, testID, "debuginfo"), p)
	// Another client on the same cache (gdb's, or the next ctprof run)
	// finds it there without asking the server.
	c2 := New(Options{URLs: []string{srv.URL}, CacheDir: c.opts.CacheDir, Verify: verifyPrefix})
	defer c2.Close()
	p2, ok := c2.Lookup(testID)
	assert.True(t, ok)
	assert.Equal(t, p, p2)
	assert.Equal(t, 1, asked)
	assert.Empty(t, c.Failures())
}

// A server that answers 404, hangs, sends another build's file, sends
// nothing, or sends more than the bound: no file, and why.
func TestFailedFetchesKeepNothing(t *testing.T) {
	for _, tt := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "404 Not Found"},
		{"hangs", func(w http.ResponseWriter, r *http.Request) { time.Sleep(3 * time.Second) }, "no answer within 500ms"},
		{"stalls mid-file", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100000")
			_, _ = w.Write([]byte("debug file of " + testID))
			w.(http.Flusher).Flush()
			time.Sleep(3 * time.Second)
		}, "no byte for 500ms"},
		{"another build", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("debug file of ffff")) }, "not the debug file of build-id " + testID},
		{"garbage", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("\x7fELF garbage")) }, "not the debug file"},
		{"empty", func(w http.ResponseWriter, r *http.Request) {}, "an empty answer"},
		{"too large, said", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "2000000")
			_, _ = w.Write(make([]byte, 2000000))
		}, "larger than the bound"},
		{"too large, streamed", func(w http.ResponseWriter, r *http.Request) {
			w.(http.Flusher).Flush() // chunked: no length said
			for i := 0; i < 40; i++ {
				_, _ = w.Write(make([]byte, 64<<10))
			}
		}, "larger than the bound"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c := client(t, srv.URL)
			_, ok := lookupAfterFetch(t, c, testID)
			assert.False(t, ok)
			require.Error(t, c.Failed(testID))
			assert.Contains(t, c.Failed(testID).Error(), tt.want)
			fs := c.Failures()
			require.Len(t, fs, 1)
			assert.Equal(t, testID, fs[0].ID)
			// Nothing is left in the cache, not even a partial file.
			ents, _ := os.ReadDir(filepath.Join(c.opts.CacheDir, testID))
			assert.Empty(t, ents)
			// It is not asked again in the same run.
			_, ok = c.Lookup(testID)
			assert.False(t, ok)
			assert.Equal(t, 0, c.Pending())
		})
	}
}

// A build-id is the hex of a binary's note: anything else (the target's
// bytes) never reaches a path or a URL.
func TestBuildIDsThatAreNotHexAreNotAsked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("asked for %s", r.URL.Path)
	}))
	defer srv.Close()
	c := client(t, srv.URL)
	for _, id := range []string{"", "../../etc/passwd", "0123/../4567abcd", "ABCDEF0123456789", "12"} {
		_, ok := c.Lookup(id)
		assert.False(t, ok, id)
	}
	c.Wait()
	assert.Empty(t, c.Failures())
}

// The cache holds only regular files: a link there is not followed.
func TestCacheLinksAreNotFollowed(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	require.NoError(t, os.WriteFile(target, []byte("debug file of "+testID), 0o644))
	cache := filepath.Join(dir, "cache")
	require.NoError(t, os.MkdirAll(filepath.Join(cache, testID), 0o755))
	require.NoError(t, os.Symlink(target, filepath.Join(cache, testID, "debuginfo")))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	defer srv.Close()
	c := New(Options{URLs: []string{srv.URL}, CacheDir: cache, Verify: verifyPrefix})
	defer c.Close()
	_, ok := lookupAfterFetch(t, c, testID)
	assert.False(t, ok)
}

func TestOptionsFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	_, ok := OptionsFromEnv(env(map[string]string{"HOME": "/root"}))
	assert.False(t, ok, "no server named")
	_, ok = OptionsFromEnv(env(map[string]string{"DEBUGINFOD_URLS": "ftp://x file:///y", "HOME": "/root"}))
	assert.False(t, ok, "only http and https")
	o, ok := OptionsFromEnv(env(map[string]string{"DEBUGINFOD_URLS": " https://debuginfod.debian.net/  http://127.0.0.1:8002 ", "HOME": "/root"}))
	require.True(t, ok)
	assert.Equal(t, []string{"https://debuginfod.debian.net", "http://127.0.0.1:8002"}, o.URLs)
	assert.Equal(t, "/root/.cache/debuginfod_client", o.CacheDir)
	assert.Equal(t, DefaultTimeout, o.Timeout)
	assert.Equal(t, int64(DefaultMaxSize), o.MaxSize)
	o, _ = OptionsFromEnv(env(map[string]string{"DEBUGINFOD_URLS": "http://a", "XDG_CACHE_HOME": "/xdg", "DEBUGINFOD_TIMEOUT": "5", "DEBUGINFOD_MAXSIZE": "1000"}))
	assert.Equal(t, "/xdg/debuginfod_client", o.CacheDir)
	assert.Equal(t, 5*time.Second, o.Timeout)
	assert.Equal(t, int64(1000), o.MaxSize)
	o, _ = OptionsFromEnv(env(map[string]string{"DEBUGINFOD_URLS": "http://a", "DEBUGINFOD_CACHE_PATH": "/c", "XDG_CACHE_HOME": "/xdg"}))
	assert.Equal(t, "/c", o.CacheDir)
	assert.True(t, strings.HasPrefix(o.URLs[0], "http://"))
}
