package stacks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDetect: every dump under testdata/dumps/FORMAT is detected as FORMAT.
func TestDetect(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join("..", "testdata", "dumps"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		files, _ := filepath.Glob(filepath.Join("..", "testdata", "dumps", d.Name(), "*"))
		for _, f := range files {
			if strings.Contains(f, ".golden.") || filepath.Base(f) == "README.md" {
				continue
			}
			in, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			_, _, name, err := Parse(in, "")
			in.Close()
			if name != d.Name() {
				t.Errorf("%s: detected as %q (%v), want %q", f, name, err, d.Name())
			}
		}
	}
}

func TestParseUnknown(t *testing.T) {
	if _, _, _, err := Parse(strings.NewReader("hello\nworld\n"), ""); err == nil || !strings.Contains(err.Error(), "--input-format") {
		t.Errorf("prose: %v", err)
	}
	if _, _, _, err := Parse(strings.NewReader("#0 main ()"), "nonesuch"); err == nil || !strings.Contains(err.Error(), "gdb") {
		t.Errorf("unknown format: %v", err)
	}
}
