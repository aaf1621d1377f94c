package lazyre

import (
	"strings"
	"sync"
	"testing"
)

func TestCompilesOnFirstUseOnce(t *testing.T) {
	r := New(`^Thread (\d+)`)
	if r.re != nil {
		t.Fatal("compiled before its first use")
	}
	var wg sync.WaitGroup
	got := make([][]string, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = r.FindStringSubmatch("Thread 14 (LWP 2)") }()
	}
	wg.Wait()
	for _, m := range got {
		if len(m) != 2 || m[1] != "14" {
			t.Fatalf("FindStringSubmatch = %q, want the thread number", m)
		}
	}
	first := r.Regexp()
	if r.Regexp() != first {
		t.Fatal("compiled twice")
	}
}

func TestCompileAllNamesTheBadExpression(t *testing.T) {
	bad := New(`(unclosed`)
	err := CompileAll()
	if err == nil || !strings.Contains(err.Error(), "(unclosed") {
		t.Fatalf("CompileAll = %v, want the bad expression named", err)
	}
	if bad.Compile() == nil {
		t.Fatal("Compile of a bad expression said nothing")
	}
	// remove it again: other tests of this package compile All
	allMu.Lock()
	all = all[:len(all)-1]
	allMu.Unlock()
	if err := CompileAll(); err != nil {
		t.Fatal(err)
	}
}
