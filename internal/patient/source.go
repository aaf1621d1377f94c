package patient

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SourceLine returns the number of the first line of the file at path
// that contains text: tests find a patient's lines by a marker or a
// snippet ("# BLOCK locker", "to.mu.Lock()"), so editing the patient
// does not break them.
func SourceLine(t testing.TB, path, text string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), text) {
			return n
		}
	}
	t.Fatalf("patient: %s has no line with %q", path, text)
	return 0
}

// GoSourceLine is SourceLine in the Go patient testdata/gorun/name.
func GoSourceLine(t testing.TB, name, text string) int {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	return SourceLine(t, filepath.Join(root, "testdata", "gorun", name, "main.go"), text)
}
