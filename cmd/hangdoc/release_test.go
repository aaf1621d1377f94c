package main

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

func TestVersionFrom(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"v1.2.0-3-gabc1234", &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}}, "v1.2.0-3-gabc1234"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, "v1.2.0"}, // go install …@v1.2.0
		{"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef0123", "true")}, "devel-0123456789ab-dirty"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef0123", "false")}, "devel-0123456789ab"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{"", nil, "devel"},
	} {
		if got := versionFrom(c.stamped, c.bi); got != c.want {
			t.Errorf("versionFrom(%q, %+v) = %q, want %q", c.stamped, c.bi, got, c.want)
		}
	}
}

// isStatic reads an ELF executable's program headers: no interpreter
// and no dynamic section is a static binary, which runs whatever libc
// the machine has, or none.
func isStatic(t *testing.T, path string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			return false
		}
	}
	return true
}

// TestMakeBuildStatic: `make build` gives a static binary stamped with
// the version; `version` and `--version` print it; it runs in an empty
// root (a chroot holding only the binary: no libc, no loader), which is
// what a clean machine of another distribution needs of it.
func TestMakeBuildStatic(t *testing.T) {
	patient.RequireTool(t, "make")
	bin := filepath.Join(t.TempDir(), "hangdoc")
	mk := exec.Command("make", "-C", "../..", "build", "BIN="+bin, "VERSION=v9.9.9-test")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	if !isStatic(t, bin) {
		t.Errorf("%s has an interpreter or a dynamic section: not static", bin)
	}
	if path, err := exec.LookPath("file"); err == nil {
		out, _ := exec.Command(path, bin).CombinedOutput()
		if !strings.Contains(string(out), "statically linked") {
			t.Errorf("file(1) does not say statically linked: %s", out)
		}
	}
	want := "hangdoc v9.9.9-test (" + runtime.Version() + ", linux/" + runtime.GOARCH + ")\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil || string(out) != want {
			t.Errorf("hangdoc %s: %q, %v; want %q", args[0], out, err, want)
		}
	}
	if os.Geteuid() != 0 {
		patient.Missing(t, "chroot needs root")
	}
	root := t.TempDir()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hangdoc"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("chroot", root, "/hangdoc", "version").CombinedOutput()
	if err != nil || string(out) != want {
		t.Errorf("in an empty root: %q, %v; want %q", out, err, want)
	}
}

// TestMakeRelease: `make release` writes one static binary per
// architecture and their SHA-256 sums. The test builds this machine's
// architecture (cross-building another one costs minutes here).
func TestMakeRelease(t *testing.T) {
	patient.RequireTool(t, "make")
	patient.RequireTool(t, "sha256sum")
	dist := t.TempDir()
	mk := exec.Command("make", "-C", "../..", "release", "DIST="+dist, "VERSION=v9.9.9-test", "RELEASE_ARCHES="+runtime.GOARCH)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	name := "hangdoc-v9.9.9-test-linux-" + runtime.GOARCH
	bin := filepath.Join(dist, name)
	if !isStatic(t, bin) {
		t.Errorf("%s is not static", name)
	}
	f, err := os.Open(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, file, ok := strings.Cut(sc.Text(), "  "); ok {
			sums[file] = sum
		}
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	if got := sums[name]; got != hex.EncodeToString(h[:]) || len(sums) != 1 {
		t.Errorf("SHA256SUMS %v: want one line, %s's sum %x", sums, name, h)
	}
}

// TestNoReflectMethodCalls: nothing linked into hangdoc calls a method
// by reflection (text/template, reflect.Value.Method). One such call
// makes the linker keep every exported method of every reachable type:
// the binary grew from 21.8 to 25.7 MB and started 1.1 MB larger in
// memory when cobra's version template was in, which counts against
// analyze's budget of memory no larger than its input.
func TestNoReflectMethodCalls(t *testing.T) {
	patient.RequireTool(t, "go")
	out, err := exec.Command("go", "build", "-ldflags=-dumpdep", "-o", os.DevNull, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -ldflags=-dumpdep: %v\n%.2000s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "<ReflectMethod>") {
			t.Errorf("a reflective method call is linked in, which disables the linker's removal of unused methods: %s", line)
		}
	}
}
