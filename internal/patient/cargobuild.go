package patient

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// rustHelper is the module the Rust patients include with #[path]: it
// is part of each one's cache key.
const rustHelper = "rust_patient.rs"

// Debian's vendored crates (librust-*-dev) form a directory registry:
// cargo builds against it with no network.
const debianCargoRegistry = "/usr/share/cargo/registry"

// BuildCargo builds the Cargo crate testdata/patients/name (a directory
// with Cargo.toml; its binary is named like the directory) in release
// mode, offline, its dependencies taken from Debian's vendored crates in
// /usr/share/cargo/registry, and returns the binary's path, cached under
// CacheDir by the cargo version and the sources. The crate is copied
// into the cache first, so the Cargo.lock cargo writes stays out of the
// tree. A missing registry skips the test (fails in CI: install-deps
// installs it).
func BuildCargo(t testing.TB, name string) string {
	t.Helper()
	cargo := RequireTool(t, "cargo")
	if _, err := os.Stat(debianCargoRegistry); err != nil {
		Missing(t, "Debian's vendored crates are not installed (scripts/install-deps.sh installs them): %v", err)
	}
	dir := Dir(t)
	crate := filepath.Join(dir, name)
	var srcs []string
	err := filepath.WalkDir(crate, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasSuffix(p, "Cargo.lock") {
			srcs = append(srcs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	key := rustKey(t, cargo, append(srcs, filepath.Join(dir, rustHelper)))
	target := filepath.Join(CacheDir(), name+"-"+key)
	if isFile(target) {
		return target
	}
	// The copy keeps the layout the crate's #[path] to ../../rust_patient.rs expects.
	work := filepath.Join(CacheDir(), "cargo-"+name+"-"+key)
	for _, src := range append(srcs, filepath.Join(dir, rustHelper)) {
		rel, _ := filepath.Rel(dir, src)
		dst := filepath.Join(work, "patients", rel)
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.MkdirAll(filepath.Dir(dst), 0o755)
		}
		if err == nil {
			err = os.WriteFile(dst, b, 0o644)
		}
		if err != nil {
			t.Fatalf("patient: %v", err)
		}
	}
	args := []string{"build", "--release", "--offline", "--quiet",
		"--target-dir", filepath.Join(work, "target"),
		"--config", `source.crates-io.replace-with="debian"`,
		"--config", fmt.Sprintf("source.debian.directory=%q", debianCargoRegistry)}
	cmd := exec.Command(cargo, args...)
	cmd.Dir = filepath.Join(work, "patients", name)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patient: cargo %s (in %s): %v\n%s", strings.Join(args, " "), cmd.Dir, err, msg)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", target, os.Getpid())
	defer os.Remove(tmp)
	b, err := os.ReadFile(filepath.Join(work, "target", "release", name))
	if err == nil {
		err = os.WriteFile(tmp, b, 0o755)
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	return target
}

// rustKey hashes the tool's version and the source files.
func rustKey(t testing.TB, tool string, srcs []string) string {
	t.Helper()
	version, err := exec.Command(tool, "--version").Output()
	if err != nil {
		t.Fatalf("patient: %s --version: %v", tool, err)
	}
	sort.Strings(srcs)
	h := sha256.New()
	fmt.Fprintf(h, "tool=%s\n", strings.TrimSpace(string(version)))
	for _, src := range srcs {
		hashFile(t, h, filepath.Base(src), src)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func mkCache(t testing.TB) {
	t.Helper()
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		t.Fatalf("patient: %v", err)
	}
}
