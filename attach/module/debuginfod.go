package module

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Debuginfod fetches separate debug files by build id from the servers
// in DEBUGINFOD_URLS, as gdb and elfutils do, into a cache directory.
// All fetches of one attach share one time budget: they happen while
// modules are loaded, before any thread is stopped, and whatever has not
// arrived when the budget is spent is given up. A server that does not
// answer (refused, silent) is skipped for the rest of the budget and, for
// missDelay, by later runs too, so that a dead server costs one timeout
// in ten minutes, not one per module or per attach.
type Debuginfod struct {
	URLs     []string
	CacheDir string
	// Progress, when not nil (a terminal), gets one line per fetch.
	Progress io.Writer

	client   *http.Client
	deadline time.Time
	mu       sync.Mutex
	dead     map[string]bool
	fetched  []string // "libfoo.so from URL", for notes
	failed   []string // "URL: why", for notes
}

const (
	// DebuginfodBudget is how long the fetches of one attach may take
	// in all.
	DebuginfodBudget = 10 * time.Second
	// debuginfodAnswer is how long a server may take to start answering
	// one request.
	debuginfodAnswer = 2 * time.Second
	// missDelay is how long a build id no server has, or a server that
	// did not answer, is not asked again (elfutils' cache_miss_s).
	missDelay = 10 * time.Minute
	// maxDebugFetch bounds the size of a fetched file.
	maxDebugFetch = 4 << 30
)

// NewDebuginfod returns a client for the servers in DEBUGINFOD_URLS
// (space-separated), caching under $XDG_CACHE_HOME/hangdoc/debuginfod (or
// ~/.cache/hangdoc/debuginfod), with budget for all fetches from now; nil
// when DEBUGINFOD_URLS names no server.
func NewDebuginfod(budget time.Duration) *Debuginfod {
	var urls []string
	for _, u := range strings.Fields(os.Getenv("DEBUGINFOD_URLS")) {
		if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
			urls = append(urls, strings.TrimRight(u, "/"))
		}
	}
	if len(urls) == 0 {
		return nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil
		}
		cache = filepath.Join(home, ".cache")
	}
	return &Debuginfod{
		URLs:     urls,
		CacheDir: filepath.Join(cache, "hangdoc", "debuginfod"),
		client:   &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, ResponseHeaderTimeout: debuginfodAnswer}},
		deadline: time.Now().Add(budget),
		dead:     map[string]bool{},
	}
}

// Fetched says which files were fetched from a server (not the cache).
func (d *Debuginfod) Fetched() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.fetched...)
}

// Failed says which servers failed in this run, and why.
func (d *Debuginfod) Failed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.failed...)
}

// debugFile returns the path of the cached debug file for build id id,
// fetching it first if needed; "" when no server has it in time. name
// (a base name) is for progress lines.
func (d *Debuginfod) debugFile(id, name string) string {
	if d == nil || len(id) < 4 || strings.ContainsAny(id, "/.") {
		return ""
	}
	dir := filepath.Join(d.CacheDir, id)
	path := filepath.Join(dir, "debuginfo")
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		return path
	}
	miss := filepath.Join(dir, "miss")
	if recent(miss) {
		return ""
	}
	allMissed := true
	for _, u := range d.URLs {
		if d.isDead(u) {
			allMissed = false
			continue
		}
		err := d.fetch(u, id, name, dir, path)
		if err == nil {
			d.mu.Lock()
			d.fetched = append(d.fetched, fmt.Sprintf("%s from %s", name, u))
			d.mu.Unlock()
			return path
		}
		if !errors.Is(err, errNotThere) {
			allMissed = false
			if !errors.Is(err, errPartial) {
				d.markDead(u, err)
			}
		}
		d.progress("debuginfod: %s: %v\n", name, err)
	}
	if allMissed && os.MkdirAll(dir, 0o755) == nil {
		os.WriteFile(miss, nil, 0o644)
	}
	return ""
}

var (
	errNotThere = errors.New("not on the server")
	// errPartial wraps a failure after the server answered: it is alive.
	errPartial = errors.New("download cut short")
)

// fetch gets one file from server u into path, through a temporary file
// so that an interrupted download leaves nothing.
func (d *Debuginfod) fetch(u, id, name, dir, path string) error {
	ctx, cancel := context.WithDeadline(context.Background(), d.deadline)
	defer cancel()
	if time.Until(d.deadline) <= 0 {
		return errors.New("time budget spent")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/buildid/"+id+"/debuginfo", nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "hangdoc")
	d.progress("debuginfod: fetching the debug file of %s from %s…\n", name, u)
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return errNotThere
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "debuginfo-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, io.LimitReader(resp.Body, maxDebugFetch+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return fmt.Errorf("%w after %d bytes: %v", errPartial, n, err)
	case n > maxDebugFetch:
		return fmt.Errorf("larger than %d bytes: not kept", int64(maxDebugFetch))
	}
	d.progress("debuginfod: %s: %.1f MB\n", name, float64(n)/1e6)
	return os.Rename(tmp.Name(), path)
}

func (d *Debuginfod) progress(format string, args ...any) {
	if d.Progress != nil {
		fmt.Fprintf(d.Progress, format, args...)
	}
}

// isDead says whether server u failed in this run or, recently, in an
// earlier one.
func (d *Debuginfod) isDead(u string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead[u] {
		return true
	}
	return recent(d.deadMark(u))
}

func (d *Debuginfod) markDead(u string, why error) {
	d.mu.Lock()
	d.dead[u] = true
	d.failed = append(d.failed, fmt.Sprintf("%s: %v", u, why))
	d.mu.Unlock()
	if os.MkdirAll(d.CacheDir, 0o755) == nil {
		os.WriteFile(d.deadMark(u), []byte(u+"\n"), 0o644)
	}
}

// deadMark is the file whose age says when server u last failed.
func (d *Debuginfod) deadMark(u string) string {
	h := sha256.Sum256([]byte(u))
	return filepath.Join(d.CacheDir, "unreachable-"+hex.EncodeToString(h[:8]))
}

// recent says whether the file at path was written less than missDelay
// ago.
func recent(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && time.Since(fi.ModTime()) < missDelay
}
