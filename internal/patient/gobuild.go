package patient

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BuildGo builds the Go patient testdata/gorun/name (a main package in the
// hangdoc module) with the machine's go and returns the binary's path,
// cached under CacheDir by the go version, the flags and the source.
func BuildGo(t testing.TB, name string, flags ...string) string {
	t.Helper()
	return buildGo(t, RequireTool(t, "go"), name, flags)
}

// BuildGoWith is BuildGo with another Go toolchain (an older release:
// /usr/lib/go-1.19/bin/go), in a module of its own so that hangdoc's
// go.mod does not ask for a newer Go.
func BuildGoWith(t testing.TB, gobin, name string, flags ...string) string {
	t.Helper()
	return buildGo(t, gobin, name, flags)
}

// The package the Go patients share (their dump on HANGDOC_DUMP), in
// testdata/gorun/selfdump: another toolchain builds a patient in a
// module of its own and finds it there through a replace directive.
const (
	sharedGoDir    = "selfdump"
	sharedGoModule = "github.com/hangdoc/hangdoc/testdata/gorun/" + sharedGoDir
)

func buildGo(t testing.TB, gobin, name string, flags []string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	dir := filepath.Join(root, "testdata", "gorun", name)
	srcs, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	if len(srcs) == 0 {
		t.Fatalf("patient: no Go source in %s", dir)
	}
	shared, _ := filepath.Glob(filepath.Join(root, "testdata", "gorun", sharedGoDir, "*.go"))
	version, err := exec.Command(gobin, "env", "GOVERSION").Output() // part of the cache key
	if err != nil {
		t.Fatalf("patient: go env GOVERSION: %v", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "go=%s\nflags=%q\n", strings.TrimSpace(string(version)), flags)
	for _, src := range srcs {
		hashFile(t, h, filepath.Base(src), src)
	}
	for _, src := range shared {
		hashFile(t, h, filepath.Join(sharedGoDir, filepath.Base(src)), src)
	}
	target := filepath.Join(CacheDir(), "go-"+name+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	if fi, err := os.Stat(target); err == nil && fi.Mode().IsRegular() {
		return target
	}
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		t.Fatalf("patient: %v", err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", target, os.Getpid())
	defer os.Remove(tmp)
	args := append(append([]string{"build"}, flags...), "-o", tmp, "./testdata/gorun/"+name)
	cmd := exec.Command(gobin, args...)
	cmd.Dir = root
	if own, _ := exec.LookPath("go"); own != gobin {
		// Another toolchain: the patient's sources in a module of their own.
		mod := target + ".mod"
		copyGoFiles(t, mod, srcs)
		copyGoFiles(t, filepath.Join(mod, sharedGoDir), shared)
		writeGoMod(t, filepath.Join(mod, sharedGoDir), sharedGoModule, "")
		writeGoMod(t, mod, "example.com/"+name, fmt.Sprintf("\nrequire %s v0.0.0\n\nreplace %[1]s => ./%s\n", sharedGoModule, sharedGoDir))
		args = append(append([]string{"build"}, flags...), "-o", tmp, ".")
		cmd = exec.Command(gobin, args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOTOOLCHAIN=local")
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patient: go %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	if err := os.Rename(tmp, target); err != nil {
		t.Fatalf("patient: %v", err)
	}
	return target
}

// copyGoFiles copies srcs into dir.
func copyGoFiles(t testing.TB, dir string, srcs []string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("patient: %v", err)
	}
	for _, src := range srcs {
		b, _ := os.ReadFile(src)
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o644); err != nil {
			t.Fatalf("patient: %v", err)
		}
	}
}

// writeGoMod writes dir/go.mod for module path at go 1.19, then more.
func writeGoMod(t testing.TB, dir, path, more string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module "+path+"\n\ngo 1.19\n"+more), 0o644); err != nil {
		t.Fatalf("patient: %v", err)
	}
}
