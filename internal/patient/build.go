package patient

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Building the patients: C, C++ and Rust sources compiled once per
// content and flags, cached under CacheDir; stripped and MiniDebugInfo
// variants.

// Build compiles testdata/patients/name with flags and returns the path of
// the binary. C (.c) is built with $CC or gcc, C++ (.cpp, .cc) with $CXX or
// g++. Binaries are cached under CacheDir, keyed by the compiler, the
// flags, the source and the shared headers, so repeated runs reuse them. A
// Python patient (.py) is not built: Build returns the script's path, to be
// run as Start(t, patient.Python, path). Flags that name a library ("-l…",
// as Link returns) go after the source, where the linker wants them.
func Build(t testing.TB, name string, flags ...string) string {
	t.Helper()
	if filepath.Ext(name) == ".py" {
		return filepath.Join(Dir(t), name)
	}
	return BuildFile(t, filepath.Join(Dir(t), name), flags...)
}

// BuildCC is Build with the C compiler cc instead of $CC or gcc:
// "musl-gcc" for a patient linked against musl,
// "aarch64-linux-gnu-gcc" for one cross-built for arm64.
func BuildCC(t testing.TB, cc, name string, flags ...string) string {
	t.Helper()
	src := filepath.Join(Dir(t), name)
	base := strings.TrimSuffix(name, filepath.Ext(name))
	return buildWith(t, cc, src, flags, func(key string) string {
		return filepath.Join(CacheDir(), base+"-"+key)
	})
}

// BuildFile is Build for a source outside testdata/patients (a package's
// own testdata): path is absolute or relative to the working directory.
// The headers beside the source are part of the cache key.
func BuildFile(t testing.TB, path string, flags ...string) string {
	t.Helper()
	src, err := filepath.Abs(path)
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	base := strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))
	return build(t, src, flags, func(key string) string {
		return filepath.Join(CacheDir(), base+"-"+key)
	})
}

// BuildLib compiles testdata/patients/name (C or C++) into the shared
// library lib<name without extension>.so (-shared -fPIC and flags) and
// returns the directory that holds it, cached like Build. Link a patient
// against it with Build(t, patient, append(flags, Link(dir, lib)...)...).
// A changed library source gives a new directory, hence new flags and a
// rebuilt patient.
func BuildLib(t testing.TB, name string, flags ...string) string {
	t.Helper()
	base := strings.TrimSuffix(name, filepath.Ext(name))
	flags = append([]string{"-shared", "-fPIC"}, flags...)
	lib := build(t, filepath.Join(Dir(t), name), flags, func(key string) string {
		return filepath.Join(CacheDir(), "lib"+base+"-"+key, "lib"+base+".so")
	})
	return filepath.Dir(lib)
}

// Link returns the flags that link a patient against lib<lib>.so in dir
// (as BuildLib made it) and let it find the library there when it runs.
func Link(dir, lib string) []string {
	return []string{"-L" + dir, "-Wl,-rpath," + dir, "-l" + lib}
}

// build compiles the source file src (an absolute path) with flags into
// the path that out gives for the cache key, unless that file is there
// already.
func build(t testing.TB, src string, flags []string, out func(key string) string) string {
	t.Helper()
	return buildWith(t, "", src, flags, out)
}

// buildWith is build with the compiler given ("" for the default one of
// the source's language).
func buildWith(t testing.TB, compiler, src string, flags []string, out func(key string) string) string {
	t.Helper()
	dir := filepath.Dir(src)
	source, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	switch ext := filepath.Ext(src); {
	case compiler != "":
	case ext == ".c":
		compiler = envOr("CC", "gcc")
	case ext == ".cpp", ext == ".cc":
		compiler = envOr("CXX", "g++")
	case ext == ".rs":
		compiler = envOr("RUSTC", "rustc")
	default:
		t.Fatalf("patient: %s: do not know how to build %q files", filepath.Base(src), filepath.Ext(src))
	}
	RequireTool(t, compiler)

	h := sha256.New()
	fmt.Fprintf(h, "compiler=%s\nflags=%q\n", compiler, flags)
	h.Write(source)
	headers, _ := filepath.Glob(filepath.Join(dir, "*.h"))
	sort.Strings(headers)
	for _, hdr := range headers {
		hashFile(t, h, filepath.Base(hdr), hdr)
	}
	// A Rust patient's helper modules (#[path = "rust_patient.rs"]) are
	// its headers.
	for _, m := range rustPathAttr.FindAllSubmatch(source, -1) {
		hashFile(t, h, string(m[1]), filepath.Join(dir, string(m[1])))
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	target := out(key)
	if fi, err := os.Stat(target); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return target
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatalf("patient: %v", err)
	}
	// Build into a temporary name and rename: two test binaries building
	// the same patient at once both end with a whole binary.
	tmp, err := os.CreateTemp(filepath.Dir(target), filepath.Base(target)+"-*.tmp")
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	var opts, libs []string
	for _, f := range flags {
		if strings.HasPrefix(f, "-l") {
			libs = append(libs, f)
		} else {
			opts = append(opts, f)
		}
	}
	args := append(append(append([]string{}, opts...), "-o", tmp.Name(), src), libs...)
	cmd := exec.Command(compiler, args...)
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patient: %s %s: %v\n%s", compiler, strings.Join(args, " "), err, msg)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		t.Fatalf("patient: %v", err)
	}
	return target
}

var rustPathAttr = regexp.MustCompile(`#\[path\s*=\s*"([^"]+)"\]`)

// Strip returns a copy of the binary bin without its symbol tables
// (strip(1)), cached beside it.
func Strip(t testing.TB, bin string) string {
	t.Helper()
	out := bin + "-stripped"
	if _, err := os.Stat(out); err == nil {
		return out
	}
	strip := RequireTool(t, "strip")
	tmp := out + fmt.Sprintf(".%d.tmp", os.Getpid())
	defer os.Remove(tmp)
	if msg, err := exec.Command(strip, "-o", tmp, bin).CombinedOutput(); err != nil {
		t.Fatalf("patient: strip %s: %v\n%s", bin, err, msg)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatalf("patient: %v", err)
	}
	return out
}

// MiniDebugInfo returns a copy of the binary bin stripped of its
// symbols and given them back as MiniDebugInfo (.gnu_debugdata), by the
// recipe Fedora's find-debuginfo runs (gdb's manual, "MiniDebugInfo"):
// the function symbols .dynsym lacks, kept in an objcopy
// --only-keep-debug copy without DWARF, xz-compressed into the stripped
// binary. Cached beside bin.
func MiniDebugInfo(t testing.TB, bin string) string {
	t.Helper()
	out := bin + "-minidebuginfo"
	if _, err := os.Stat(out); err == nil {
		return out
	}
	for _, tool := range []string{"nm", "objcopy", "strip", "xz", "comm", "awk", "sort", "sh"} {
		RequireTool(t, tool)
	}
	dir := t.TempDir()
	script := `set -e
cp "$1" binary
nm -D binary --format=posix --defined-only | awk '{ print $1 }' | sort > dynsyms
nm binary --format=posix --defined-only | awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort > funcsyms
comm -13 dynsyms funcsyms > keep_symbols
objcopy --only-keep-debug binary debug
objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep_symbols debug mini_debuginfo
strip --strip-all -R .comment binary
xz mini_debuginfo
objcopy --add-section .gnu_debugdata=mini_debuginfo.xz binary
`
	cmd := exec.Command("sh", "-c", script, "sh", bin)
	cmd.Dir = dir
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patient: MiniDebugInfo of %s: %v\n%s", bin, err, msg)
	}
	tmp := out + fmt.Sprintf(".%d.tmp", os.Getpid())
	defer os.Remove(tmp)
	if msg, err := exec.Command("cp", filepath.Join(dir, "binary"), tmp).CombinedOutput(); err != nil {
		t.Fatalf("patient: %v\n%s", err, msg)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatalf("patient: %v", err)
	}
	return out
}

// hashFile adds a file to a build's cache key: its name, then its bytes.
func hashFile(t testing.TB, h io.Writer, name, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	fmt.Fprintf(h, "\n%s\n", name)
	h.Write(b)
}
