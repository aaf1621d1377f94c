package module

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	b := progs(t)
	dir := t.TempDir()
	p := copyFile(t, b["O2"], dir)
	link := filepath.Join(dir, "hardlink")
	if err := os.Link(p, link); err != nil {
		t.Fatal(err)
	}
	c := NewCache()
	defer c.Close()

	f1, err := c.Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Another name for the same inode, from many goroutines at once.
	var wg sync.WaitGroup
	got := make([]*File, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = c.Open(link, Options{})
		}()
	}
	wg.Wait()
	for i, f := range got {
		if f != f1 {
			t.Fatalf("open %d through a hard link: a new File, want the cached one", i)
		}
	}
	if c.Len() != 1 {
		t.Errorf("Len = %d, want 1", c.Len())
	}

	// A rewritten file is a new file.
	data, _ := os.ReadFile(b["O0g"])
	os.Remove(p)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, time.Now(), time.Now().Add(time.Second))
	f2, err := c.Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f2 == f1 || c.Len() != 2 {
		t.Errorf("rewritten file: same File %v, Len %d", f2 == f1, c.Len())
	}

	// Errors are cached too, and still say which file.
	bad := filepath.Join(dir, "bad.so")
	os.WriteFile(bad, []byte("\x7fELF garbage"), 0o644)
	for range 2 {
		if _, err := c.Open(bad, Options{OriginalPath: "/usr/lib/bad.so"}); err == nil || err.Error()[:8] != "bad.so: " {
			t.Errorf("Open(bad) = %v", err)
		}
	}
}

// TestConcurrentLookups runs symbol, line and CFI lookups of one cached
// File from many goroutines (go test -race checks the lazy line table).
func TestConcurrentLookups(t *testing.T) {
	b := progs(t)
	c := NewCache()
	defer c.Close()
	f, err := c.Open(b["O0g"], Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := nmAddrs(t, b["O0g"])["line_marker"]
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := NewSpace()
			for _, m := range kernelMappings(f, 0x555555554000, "/opt/prog") {
				s.Add(f, m)
			}
			for range 100 {
				if fr := s.Symbolize(0x555555554000 + addr); fr.Func != "line_marker" || fr.Line == 0 {
					t.Errorf("Symbolize = %+v", fr)
					return
				}
				if s.FDEForPC(0x555555554000+addr) == nil {
					t.Error("no FDE")
					return
				}
			}
		}()
	}
	wg.Wait()
}
