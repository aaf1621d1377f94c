package patient

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var hangdocBinary struct {
	once sync.Once
	path string
	err  error
}

// Hangdoc builds cmd/hangdoc once per test binary and returns its path:
// tests of signals, process groups, exit codes and kills run the real
// binary. Its name is the checkout's (worktrees of the repository test
// side by side on one machine, each with its own hangdoc); it is built
// under a temporary name and renamed, so test binaries running at once
// each execute a whole file.
func Hangdoc(t testing.TB) string {
	t.Helper()
	hangdocBinary.once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			hangdocBinary.err = err
			return
		}
		dir := CacheDir()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			hangdocBinary.err = err
			return
		}
		sum := sha256.Sum256([]byte(root))
		final := filepath.Join(dir, "hangdoc-under-test-"+hex.EncodeToString(sum[:6]))
		tmp := fmt.Sprintf("%s-%d.tmp", final, os.Getpid())
		cmd := exec.Command("go", "build", "-o", tmp, "github.com/hangdoc/hangdoc/cmd/hangdoc")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp)
			hangdocBinary.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		hangdocBinary.path, hangdocBinary.err = final, os.Rename(tmp, final)
	})
	if hangdocBinary.err != nil {
		t.Fatal(hangdocBinary.err)
	}
	return hangdocBinary.path
}
