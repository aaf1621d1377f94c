// Package patient builds and runs hangdoc's patients: small programs under
// testdata/patients that hang in one known way, print the line "ready" once
// every thread is in its final blocked state, and hang until killed.
//
// Tests use it like this:
//
//	patient.RequirePtrace(t)
//	bin := patient.Build(t, "mutex_o2.c", patient.O2...)
//	p := patient.Start(t, bin)
//	snap, err := attach.Attach(ctx, []int{p.Pid}, attach.Options{})
//
// Start registers a cleanup that SIGKILLs the patient's process group and
// reaps it, whatever the test does; the patient also gets SIGKILL if the
// test binary dies (Pdeathsig), so no patient outlives its test.
package patient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// Flag sets the patients are built with.
var (
	// O2 is optimised code without frame pointers: unwinding needs CFI.
	O2 = []string{"-O2", "-fomit-frame-pointer", "-pthread"}
	// O0g is unoptimised code with debug information.
	O0g = []string{"-O0", "-g", "-pthread"}
	// O2g is optimised code with debug information (inlined frames).
	O2g = []string{"-O2", "-g", "-pthread"}
	// RustO2g is optimised Rust with debug information: std's Mutex::lock
	// is inlined into its caller.
	RustO2g = []string{"-C", "opt-level=2", "-g"}
)

// Python is the interpreter the Python patients run with.
const Python = "/usr/bin/python3"

const (
	readyTimeout  = 10 * time.Second
	settleTimeout = 500 * time.Millisecond
	gdbTimeout    = 60 * time.Second
	reapTimeout   = 10 * time.Second
	dumpTimeout   = 60 * time.Second
)

// inCI says whether a missing prerequisite fails the test instead of
// skipping it.
func inCI() bool { return os.Getenv("CI") == "true" }

// Dir returns the absolute path of testdata/patients.
func Dir(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	return filepath.Join(root, "testdata", "patients")
}

// repoRoot finds the directory holding go.mod, starting from the working
// directory (a test runs in its package's folder) and then from this file.
func repoRoot() (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				if _, err := os.Stat(filepath.Join(d, "testdata", "patients")); err == nil {
					return d, nil
				}
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("cannot find the repository root (go.mod beside testdata/patients) above the working directory")
}

// CacheDir is where built patients are kept between test runs.
func CacheDir() string { return filepath.Join(os.TempDir(), "hangdoc-patients") }

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
		b, err := os.ReadFile(hdr)
		if err != nil {
			t.Fatalf("patient: %v", err)
		}
		fmt.Fprintf(h, "\n%s\n", filepath.Base(hdr))
		h.Write(b)
	}
	// A Rust patient's helper modules (#[path = "rust_patient.rs"]) are
	// its headers.
	for _, m := range rustPathAttr.FindAllSubmatch(source, -1) {
		b, err := os.ReadFile(filepath.Join(dir, string(m[1])))
		if err != nil {
			t.Fatalf("patient: %s: %v", filepath.Base(src), err)
		}
		fmt.Fprintf(h, "\n%s\n", m[1])
		h.Write(b)
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

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Proc is a running patient.
type Proc struct {
	Pid  int
	Argv []string

	cmd    *exec.Cmd
	stderr *capBuffer

	mu     sync.Mutex
	lines  []string      // stdout lines not yet taken
	eof    bool          // stdout closed: the patient exited
	notify chan struct{} // signalled when lines or eof change

	killOnce sync.Once
	release  chan struct{} // closed once reaped: frees the forking thread

	early []string // lines before "ready", as Start read them

	core string // where the kernel writes its core, for StartDumpable
}

// Start runs argv (a patient built by Build, or Python and a script) in a
// process group of its own, waits up to 10 s for its "ready" line and
// registers a cleanup that SIGKILLs the group and reaps the patient. If the
// patient exits or is not ready in time, the test fails with its stderr.
func Start(t testing.TB, argv ...string) *Proc {
	t.Helper()
	return start(t, "", argv)
}

// start is Start, run in the directory dir ("" for the test's own).
func start(t testing.TB, dir string, argv []string) *Proc {
	t.Helper()
	return launch(t, launchSpec{argv: argv, dir: dir, stderrMax: 64 << 10, ready: "ready", settle: true})
}

// launchSpec says how launch runs a patient.
type launchSpec struct {
	argv      []string
	dir       string
	env       []string // nil: the test's environment
	stderrMax int      // stderr kept, its last bytes
	ready     string   // the line that says the patient is in its state
	// settle waits, after the ready line, for the patient's threads to
	// sleep (a C or Python patient's last thread still has to reach its
	// wait).
	settle bool
}

// launch starts a patient and waits for its ready line (see Start).
func launch(t testing.TB, spec launchSpec) *Proc {
	t.Helper()
	argv := spec.argv
	if len(argv) == 0 {
		t.Fatal("patient.Start: no command")
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	p := &Proc{Argv: argv, stderr: &capBuffer{max: spec.stderrMax}, notify: make(chan struct{}, 1)}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Dir = spec.dir
	p.cmd.Env = spec.env
	p.cmd.Stdout = wr
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL, // the test binary died: so does the patient
	}
	p.cmd.WaitDelay = 5 * time.Second
	// Pdeathsig fires when the thread that forked the patient exits, not
	// the process: a test's ptrace code may end a locked OS thread, and it
	// must not be this one. Fork from a thread of our own, kept until the
	// patient is reaped.
	started := make(chan error, 1)
	p.release = make(chan struct{})
	go func() {
		runtime.LockOSThread()
		err := p.cmd.Start()
		started <- err
		if err == nil {
			<-p.release
		}
		runtime.UnlockOSThread()
	}()
	if err := <-started; err != nil {
		rd.Close()
		wr.Close()
		t.Fatalf("patient: start %s: %v", argv[0], err)
	}
	wr.Close()
	p.Pid = p.cmd.Process.Pid
	t.Cleanup(func() { p.Kill(t) })
	go p.readLines(rd)

	deadline := time.Now().Add(readyTimeout)
	line, err := p.NextLine(readyTimeout)
	for err == nil && line != spec.ready {
		p.early = append(p.early, line)
		line, err = p.NextLine(max(time.Until(deadline), time.Millisecond))
	}
	if err != nil {
		p.Kill(t) // reaped: its stderr is complete
		t.Fatalf("patient %s (pid %d): no %q line: %v\nstderr:\n%s", filepath.Base(argv[0]), p.Pid, spec.ready, err, p.Stderr())
	}
	if spec.settle {
		// The thread that printed "ready" still has to reach its own
		// wait: give it (not a busy patient's runners) a moment to get
		// there.
		if !p.Settle(settleTimeout) {
			// A busy patient (a spinner) never settles; a blocking one
			// that did not may be read mid-way: the log says which.
			t.Logf("patient %s (pid %d): not every thread asleep in a syscall %v after ready", filepath.Base(spec.argv[0]), p.Pid, settleTimeout)
		}
	}
	return p
}

// Early returns the lines the patient wrote before "ready" ("child=4712",
// "owner=4702", …), which Start read while waiting for it.
func (p *Proc) Early() []string { return append([]string(nil), p.early...) }

// Int returns n from the line "name=n" the patient wrote before "ready"
// (a forked patient says "child=<pid>", the TID of a lock's owner
// "owner=<tid>", …) and fails the test when there is no such line.
func (p *Proc) Int(t testing.TB, name string) int {
	t.Helper()
	for _, l := range p.early {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("patient %d: line %q: %v", p.Pid, l, err)
			}
			return n
		}
	}
	t.Fatalf("patient %d: no line %q before \"ready\" (lines: %q)", p.Pid, name+"=…", p.early)
	return 0
}

func (p *Proc) readLines(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		p.mu.Unlock()
		p.wake()
	}
	// A line longer than 1 MiB ends the reading; the patients never write one.
	p.mu.Lock()
	p.eof = true
	p.mu.Unlock()
	p.wake()
}

func (p *Proc) wake() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// NextLine returns the next line the patient wrote on stdout, waiting up to
// timeout for it. It fails with io.EOF once the patient closed stdout.
func (p *Proc) NextLine(timeout time.Duration) (string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		if len(p.lines) > 0 {
			l := p.lines[0]
			p.lines = p.lines[1:]
			p.mu.Unlock()
			return l, nil
		}
		eof := p.eof
		p.mu.Unlock()
		if eof {
			return "", fmt.Errorf("patient exited (%s): %w", p.exitStatus(), io.EOF)
		}
		select {
		case <-p.notify:
		case <-deadline.C:
			return "", fmt.Errorf("no line from the patient within %v", timeout)
		}
	}
}

// Expect returns the first stdout line that starts with prefix, skipping
// others, and fails the test if none comes within timeout.
func (p *Proc) Expect(t testing.TB, prefix string, timeout time.Duration) string {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		left := time.Until(end)
		if left <= 0 {
			left = time.Millisecond
		}
		l, err := p.NextLine(left)
		if err != nil {
			t.Fatalf("patient %d: waiting for a line starting with %q: %v\nstderr:\n%s", p.Pid, prefix, err, p.Stderr())
		}
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
}

// Ask sends sig to the patient and returns the first line it then writes
// that starts with prefix ("maxgap_ns=", "ok ", …); a line starting with
// "FAIL" is returned too, so the caller sees what went wrong.
func (p *Proc) Ask(t testing.TB, sig syscall.Signal, prefix string, timeout time.Duration) string {
	t.Helper()
	if err := p.Signal(sig); err != nil {
		t.Fatalf("patient %d: %v", p.Pid, err)
	}
	end := time.Now().Add(timeout)
	for {
		l, err := p.NextLine(max(time.Until(end), time.Millisecond))
		if err != nil {
			t.Fatalf("patient %d: after %v, waiting for %q: %v\nstderr:\n%s", p.Pid, sig, prefix, err, p.Stderr())
		}
		if strings.HasPrefix(l, prefix) || strings.HasPrefix(l, "FAIL") {
			return l
		}
	}
}

// Signal sends sig to the patient (its main process, not the group).
func (p *Proc) Signal(sig syscall.Signal) error {
	if err := syscall.Kill(p.Pid, sig); err != nil {
		return fmt.Errorf("kill -%d %d: %w", sig, p.Pid, err)
	}
	return nil
}

// Stderr returns what the patient wrote on stderr so far (the last 64 KiB).
func (p *Proc) Stderr() string { return p.stderr.String() }

// Tasks returns the state letter (R, S, D, T, t, Z, …) of every thread of
// the patient, by TID, from /proc/PID/task/*/stat.
func (p *Proc) Tasks() (map[int]string, error) { return Tasks(p.Pid) }

// Tasks returns the state letter of every thread of process pid, by TID.
func Tasks(pid int) (map[int]string, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[int]string, len(ents))
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		st, err := statState(b)
		if err != nil {
			return nil, fmt.Errorf("%s/%d/stat: %v", dir, tid, err)
		}
		out[tid] = st
	}
	return out, nil
}

// statState reads the state letter from a /proc stat line; the command
// name before it is in parentheses and may hold spaces and parentheses.
func statState(b []byte) (string, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return "", errors.New("no state field")
	}
	return string(b[i+2 : i+3]), nil
}

// Settle waits up to timeout until every thread of the patient sleeps in
// a syscall (its /proc/PID/task/TID/syscall is not "running") in two
// passes in a row, and says whether that happened. A busy patient never
// settles; that is not an error.
func (p *Proc) Settle(timeout time.Duration) bool { return Asleep(p.Pid, timeout) }

// Asleep waits up to timeout until every thread of pid sleeps in a
// syscall in two passes in a row, and says whether that happened: tests
// poll for the state they need instead of sleeping for a fixed time.
func Asleep(pid int, timeout time.Duration) bool {
	end := time.Now().Add(timeout)
	quiet := 0
	for time.Now().Before(end) {
		if allAsleep(pid) {
			quiet++
			if quiet == 2 {
				return true
			}
		} else {
			quiet = 0
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// allAsleep: every thread is blocked in a system call. When the syscall
// file is refused (no ptrace permission), the kernel's state letter
// decides: a thread that cannot be seen asleep is not asleep.
func allAsleep(pid int) bool {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "syscall"))
		if errors.Is(err, os.ErrPermission) {
			st, serr := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
			if state, perr := statState(st); serr != nil || perr != nil || (state != "S" && state != "D") {
				return false
			}
			continue
		}
		if err != nil {
			continue // the thread exited
		}
		if len(b) == 0 || b[0] < '0' || b[0] > '9' {
			return false // "running", or "-1 …" (not in a syscall)
		}
	}
	return true
}

// Kill SIGKILLs the patient's process group and reaps the patient. Start
// registers it as a cleanup; calling it earlier is fine.
func (p *Proc) Kill(t testing.TB) {
	p.killOnce.Do(func() {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		_ = syscall.Kill(p.Pid, syscall.SIGKILL)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
			close(p.release)
		case <-time.After(reapTimeout):
			// keep the forking thread: its exit would not matter now,
			// but the patient is still there to be looked at
			t.Logf("patient %d: not reaped %v after SIGKILL (state %s)", p.Pid, reapTimeout, procState(p.Pid))
		}
	})
}

// Wait waits up to timeout for the patient to exit by itself, reaps it
// and returns its wait status; its stderr (Stderr) is complete then. If
// the patient is still running after timeout, Wait SIGKILLs its group and
// fails the test. Wait replaces Kill: call at most one of them first.
func (p *Proc) Wait(t testing.TB, timeout time.Duration) syscall.WaitStatus {
	t.Helper()
	var late bool
	p.killOnce.Do(func() {
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(timeout):
			late = true
			_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
			_ = syscall.Kill(p.Pid, syscall.SIGKILL)
			<-done
		}
		close(p.release)
	})
	if late {
		t.Fatalf("patient %d: still running %v after it was due to exit\nstderr:\n%s", p.Pid, timeout, p.Stderr())
	}
	if p.cmd.ProcessState == nil {
		t.Fatalf("patient %d: already killed and reaped", p.Pid)
	}
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws
}

// StartDumpable is Start for a patient the kernel is to dump (see
// KernelCore): it runs in dir, an existing directory where the kernel
// writes the core, with a core size limit as high as the hard limit
// allows. It skips the test (fails it when CI=true) unless
// kernel.core_pattern is a plain file name, the only kind of kernel core
// a test can find, and the hard limit allows cores.
func StartDumpable(t testing.TB, dir string, argv ...string) *Proc {
	t.Helper()
	if !filepath.IsAbs(dir) {
		t.Fatalf("patient.StartDumpable: %q is not an absolute directory", dir)
	}
	b, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil {
		Missing(t, "cannot tell where the kernel writes cores: %v", err)
	}
	pattern := strings.TrimSpace(string(b))
	if pattern == "" || strings.ContainsAny(pattern, "|%/") {
		Missing(t, "kernel.core_pattern is %q, not a plain file name: the kernel does not write the core into the process's directory", pattern)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CORE, &lim); err != nil {
		t.Fatalf("patient: getrlimit RLIMIT_CORE: %v", err)
	}
	if lim.Max == 0 {
		Missing(t, "core dumps are off: the hard RLIMIT_CORE is 0 (ulimit -Hc)")
	}
	usesPid, _ := os.ReadFile("/proc/sys/kernel/core_uses_pid")
	p := start(t, dir, argv)
	p.core = filepath.Join(dir, pattern)
	if strings.TrimSpace(string(usesPid)) == "1" {
		p.core += "." + strconv.Itoa(p.Pid)
	}
	// The limit matters only when the patient dies: setting it now, while
	// it waits, is early enough.
	lim.Cur = lim.Max
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(p.Pid), syscall.RLIMIT_CORE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		t.Fatalf("patient %d: prlimit RLIMIT_CORE: %v", p.Pid, e)
	}
	return p
}

// KernelCore has the kernel dump a patient that StartDumpable started: it
// sends SIGABRT, waits up to 60 s for the patient to die by itself (a
// SIGKILL would cut the dump short; the kernel has written the core when
// the patient's stdout closes), reaps it and returns the core's path. The
// test fails when the patient wrote no core.
func (p *Proc) KernelCore(t testing.TB) string {
	t.Helper()
	if p.core == "" {
		t.Fatalf("patient %d: KernelCore of a patient not started by StartDumpable", p.Pid)
	}
	if err := os.Remove(p.core); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("patient %d: a stale core is in the way: %v", p.Pid, err)
	}
	if err := p.Signal(syscall.SIGABRT); err != nil {
		t.Fatalf("patient %d: %v", p.Pid, err)
	}
	end := time.Now().Add(dumpTimeout)
	for {
		_, err := p.NextLine(max(time.Until(end), time.Millisecond))
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("patient %d: alive %v after SIGABRT: %v", p.Pid, dumpTimeout, err)
		}
	}
	p.Kill(t)
	select {
	case <-p.release: // reaped: ProcessState is set
	default:
		t.Fatalf("patient %d: not reaped after SIGABRT (state %s)", p.Pid, procState(p.Pid))
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.CoreDump() {
		t.Fatalf("patient %d: %v, no core dumped\nstderr:\n%s", p.Pid, p.cmd.ProcessState, p.Stderr())
	}
	if _, err := os.Stat(p.core); err != nil {
		t.Fatalf("patient %d: the kernel says it dumped a core, but: %v", p.Pid, err)
	}
	return p.core
}

func (p *Proc) exitStatus() string {
	// The reader saw EOF: the patient is exiting or gone. Peek without
	// reaping (Kill does that): /proc tells whether it is a zombie.
	if st := procState(p.Pid); st != "" {
		return "state " + st
	}
	return "gone"
}

func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	st, _ := statState(b)
	return st
}

// capBuffer keeps the last max bytes written to it; safe for concurrent use.
type capBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// RequireTool returns the path of an executable on $PATH. When it is
// missing the test is skipped, or fails when CI=true (CI installs every
// tool through scripts/install-deps.sh, so a missing one is a bug there).
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s not installed (scripts/install-deps.sh installs it): %v", name, err)
	}
	return path
}

// RequirePtrace skips the test (fails it when CI=true) unless this process
// may ptrace its children: it really seizes a short-lived child, so root
// without CAP_SYS_PTRACE, Yama's ptrace_scope, seccomp and LSMs all count.
func RequirePtrace(t testing.TB) {
	t.Helper()
	ptraceOnce.Do(func() { ptraceErr = probePtrace() })
	if ptraceErr != nil {
		Missing(t, "ptrace not permitted: %v", ptraceErr)
	}
}

var (
	ptraceOnce sync.Once
	ptraceErr  error
)

const ptraceSeize = 0x4206 // PTRACE_SEIZE, not in package syscall

func probePtrace() error {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return fmt.Errorf("cannot probe: %v", err)
	}
	// ptrace requests must come from the thread that seized; the child's
	// Pdeathsig is tied to the thread that forked it: one locked thread
	// does both.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(sleep, "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			errc <- fmt.Errorf("cannot probe: %v", err)
			return
		}
		_, _, e := syscall.Syscall6(syscall.SYS_PTRACE, ptraceSeize, uintptr(cmd.Process.Pid), 0, 0, 0, 0)
		_ = cmd.Process.Kill() // ends the trace too
		_ = cmd.Wait()
		if e != 0 {
			errc <- fmt.Errorf("PTRACE_SEIZE of a child: %v (euid %d%s%s)", e, os.Geteuid(), capPtraceNote(), yamaNote())
			return
		}
		errc <- nil
	}()
	return <-errc
}

func capPtraceNote() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return ""
			}
			if caps&(1<<19) != 0 { // CAP_SYS_PTRACE
				return ", CAP_SYS_PTRACE present"
			}
			return ", no CAP_SYS_PTRACE"
		}
	}
	return ""
}

func yamaNote() string {
	b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	if err != nil {
		return ""
	}
	return ", kernel.yama.ptrace_scope=" + strings.TrimSpace(string(b))
}

// Missing is the one way a test says a prerequisite (a tool, a package, a
// permission) is absent: it skips the test locally and fails it when
// CI=true, where scripts/install-deps.sh installs everything and the
// tests run as root.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// GDBBacktrace runs
//
//	gdb -batch -nx -ex 'set pagination off' -ex 'thread apply all bt' -p PID
//
// (debuginfod off, so gdb never waits on the network) with a 60 s timeout
// and returns what it printed, stdout and stderr interleaved as gdb wrote
// them. It skips the test when gdb is missing (fails in CI) and fails it
// when gdb fails or times out.
func GDBBacktrace(t testing.TB, pid int) string {
	t.Helper()
	return GDB(t, pid, "thread apply all bt")
}

// GDB is GDBBacktrace with other commands ("thread apply all bt full", …).
func GDB(t testing.TB, pid int, commands ...string) string {
	t.Helper()
	gdb := RequireTool(t, "gdb")
	args := append(gdbArgs(commands), "-p", strconv.Itoa(pid))
	return runGDB(t, fmt.Sprintf("gdb -p %d", pid), gdb, args...)
}

// GDBCore is GDB on a core file instead of a live process (gdb … exe
// core), with the same timeout; it needs no ptrace.
func GDBCore(t testing.TB, exe, core string, commands ...string) string {
	t.Helper()
	gdb := RequireTool(t, "gdb")
	args := append(gdbArgs(commands), exe, core)
	return runGDB(t, "gdb "+core, gdb, args...)
}

// Gcore has gdb's gcore write a core of the running process pid into dir
// and returns its path (dir/core.PID); the process runs on. It skips the
// test when gcore is missing or ptrace is not permitted (fails it when
// CI=true) and fails it when gcore fails or takes over 60 s.
func Gcore(t testing.TB, pid int, dir string) string {
	t.Helper()
	gcore := RequireTool(t, "gcore")
	RequirePtrace(t)
	prefix := filepath.Join(dir, "core")
	runGDB(t, fmt.Sprintf("gcore %d", pid), gcore, "-o", prefix, strconv.Itoa(pid))
	return fmt.Sprintf("%s.%d", prefix, pid)
}

func gdbArgs(commands []string) []string {
	args := []string{"-batch", "-nx", "-iex", "set debuginfod enabled off", "-ex", "set pagination off"}
	for _, c := range commands {
		args = append(args, "-ex", c)
	}
	return args
}

// runGDB runs gdb or one of its scripts (gcore) with a 60 s timeout and
// debuginfod off, and returns what it printed, stdout and stderr
// interleaved. It fails the test, naming the run as what, when the tool
// fails or times out.
func runGDB(t testing.TB, what, tool string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), gdbTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s: timed out after %v\n%s", what, gdbTimeout, out)
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	return string(out)
}

// StartKept starts cmd with Pdeathsig set, from an OS thread kept locked
// until the test ends. Pdeathsig fires when the thread that forked the
// child exits, not the process: hangdoc's tracer ends OS threads of the
// test binary, and a child forked from one would be killed mid-test. The
// child is SIGKILLed and reaped when the test ends.
func StartKept(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	started, release := make(chan error, 1), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-release
		}
	}()
	if err := <-started; err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		close(release)
	})
}
