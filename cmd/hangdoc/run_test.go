package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/report"
)

func init() {
	// In-process runs share the test binary, which has children of its
	// own: hangdoc must not adopt or reap them.
	adoptOrphans = false
}

// runIn runs `hangdoc args…` in-process and returns its output and exit
// code (for an error, the one main gives it).
func runIn(args ...string) (stdout, stderr string, code int, err error) {
	var out, errOut bytes.Buffer
	ios := &ioStreams{out: &out, errOut: &errOut}
	root := newRootCmd(ios)
	root.SetArgs(args)
	err = root.Execute()
	code = ios.exitCode
	if err != nil {
		code = exitCodeOf(err)
	}
	return out.String(), errOut.String(), code, err
}

// --- the built binary --------------------------------------------------

// hangdocBin is the hangdoc binary built from this checkout.
func hangdocBin(t *testing.T) string { return patient.Hangdoc(t) }

// hdRun is one `hangdoc run` of the built binary, watched: every
// process found below hangdoc while it runs is remembered.
type hdRun struct {
	cmd     *exec.Cmd
	stderr  lockedBuffer
	lines   chan string // hangdoc's stdout, a line at a time
	stdout  bytes.Buffer
	outDone chan struct{}
	mu      sync.Mutex
	seen    map[int]attach.ProcInfo
	notes   []string
	release chan struct{}
}

// lockedBuffer is a bytes.Buffer safe to read while exec writes to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startRun starts the built hangdoc with args and extra environment.
// It is SIGKILLed with everything it started when the test ends.
func startRun(t *testing.T, env []string, args ...string) *hdRun {
	t.Helper()
	bin := hangdocBin(t)
	r := &hdRun{
		lines: make(chan string, 1000), outDone: make(chan struct{}),
		seen: map[int]attach.ProcInfo{}, release: make(chan struct{}),
	}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stderr = &r.stderr
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Pdeathsig follows the thread that forks: one kept until the end.
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		started <- r.cmd.Start()
		<-r.release
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.outDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.stdout.WriteString(sc.Text() + "\n")
			select {
			case r.lines <- sc.Text():
			default:
			}
		}
	}()
	go r.watch()
	t.Cleanup(func() {
		r.kill()
		close(r.release)
	})
	return r
}

// isRuntimeFork says whether p is a child hangdoc's Go runtime forked for
// itself and never exec'd (the syscall package probes clone's pidfd
// support with a child that exits at once): it carries hangdoc's own
// name and is no part of the command's tree.
func isRuntimeFork(p, hangdoc int) bool {
	mine, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
	theirs, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/comm", hangdoc))
	return err1 == nil && err2 == nil && string(mine) == string(theirs)
}

// watch remembers every process below hangdoc until it exits.
func (r *hdRun) watch() {
	pid := r.cmd.Process.Pid
	self, err := attach.Stat(pid)
	if err != nil {
		return
	}
	for {
		tree := attach.Descendants(pid)
		// Once hangdoc has exited its pid may name another process, and
		// the tree read be that one's: stop.
		if now, err := attach.Stat(pid); err != nil || !now.Alive() || now.Start != self.Start {
			return
		}
		for _, p := range tree {
			if p == pid || isRuntimeFork(p, pid) {
				continue
			}
			if info, err := attach.Stat(p); err == nil {
				r.mu.Lock()
				if _, ok := r.seen[p]; !ok {
					r.seen[p] = info
					// Say what it was, should the test find it unexpected.
					st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
					var what []string
					for _, l := range strings.Split(string(st), "\n") {
						if k, _, _ := strings.Cut(l, ":"); k == "Name" || k == "Tgid" || k == "PPid" {
							what = append(what, strings.Join(strings.Fields(l), " "))
						}
					}
					r.notes = append(r.notes, fmt.Sprintf("pid %d: %s", p, strings.Join(what, ", ")))
				}
				r.mu.Unlock()
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wait waits for hangdoc to exit and returns its exit code.
func (r *hdRun) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		<-r.outDone
		done <- r.cmd.Wait()
	}()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("hangdoc: %v", err)
		}
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		r.kill()
		t.Fatalf("hangdoc run still running after %v\nstderr:\n%s", timeout, r.stderr.String())
		return 0
	}
}

// line waits for hangdoc's stdout (the command's) to say a line that
// starts with prefix, and returns it.
func (r *hdRun) line(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	end := time.After(timeout)
	for {
		select {
		case l := <-r.lines:
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-end:
			t.Fatalf("no line %q from the command within %v\nstderr:\n%s", prefix, timeout, r.stderr.String())
		}
	}
}

// int returns n from a line "name=n" of the command's output.
func (r *hdRun) int(t *testing.T, name string) int {
	t.Helper()
	for _, l := range strings.Split(r.stdout.String(), "\n") {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no line %q in the command's output:\n%s", name+"=…", r.stdout.String())
	return 0
}

// kill SIGKILLs hangdoc and everything it was seen to start.
func (r *hdRun) kill() {
	r.cmd.Process.Kill() // not by pid: once reaped, the pid may be another's
	r.mu.Lock()
	defer r.mu.Unlock()
	for pid, was := range r.seen {
		if info, err := attach.Stat(pid); err == nil && info.Start == was.Start {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// pids returns the processes seen below hangdoc.
func (r *hdRun) pids() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for pid := range r.seen {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// checkTreeGone fails the test unless every process seen below hangdoc
// (and each pid in also) is gone: no such pid, or a new process under
// it. Processes re-parented to init when hangdoc exited get a moment to
// be reaped.
func (r *hdRun) checkTreeGone(t *testing.T, also ...int) {
	t.Helper()
	r.mu.Lock()
	seen := maps.Clone(r.seen)
	r.mu.Unlock()
	for _, pid := range also {
		if _, ok := seen[pid]; !ok {
			t.Errorf("pid %d was never seen below hangdoc (seen: %v)", pid, r.pids())
		}
	}
	end := time.Now().Add(5 * time.Second)
	for pid, was := range seen {
		for {
			info, err := attach.Stat(pid)
			if err != nil || info.Start != was.Start {
				break
			}
			if time.Now().After(end) {
				t.Errorf("pid %d (parent %d, state %c) outlived hangdoc run", pid, info.PPid, info.State)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// --- a hang is diagnosed, reported and killed --------------------------

func TestRunTimeoutDeadlock(t *testing.T) {
	patient.RequirePtrace(t)
	abba := patient.Build(t, "abba.c", patient.O2g...)
	dir := t.TempDir()
	rep, summary := filepath.Join(dir, "hang.json"), filepath.Join(dir, "summary.md")
	if err := os.WriteFile(summary, []byte("# an earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startRun(t, []string{"GITHUB_STEP_SUMMARY=" + summary},
		"run", "--timeout", "3s", "--report", rep, "--format", "json", "--", abba)
	start := time.Now()
	code := r.wait(t, 60*time.Second)
	stderr := r.stderr.String()
	if code != exitRunHang {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitRunHang, stderr)
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("exited after %v, before the 3s timeout", took)
	}
	ab, ba := r.int(t, "ab"), r.int(t, "ba")
	for _, want := range []string{"outlived --timeout 3s", "lock-order-cycle", strconv.Itoa(ab), strconv.Itoa(ba), "exit 121: a hang was named"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(r.stdout.String(), "ready\n") {
		t.Errorf("the command's stdout did not come through: %q", r.stdout.String())
	}
	pids := r.pids()
	if len(pids) != 1 {
		r.mu.Lock()
		t.Errorf("processes seen below hangdoc: %+v, want the patient alone; %v", r.seen, r.notes)
		r.mu.Unlock()
	}
	r.checkTreeGone(t)

	// --report FILE in --format json.
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema    string `json:"schema"`
		Processes []struct {
			Pid int `json:"pid"`
		} `json:"processes"`
		Diagnoses []struct {
			ID   string `json:"id"`
			Tids []int  `json:"tids"`
		} `json:"diagnoses"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("--report is not JSON: %v\n%s", err, b)
	}
	if doc.Schema != "hangdoc/v1" || len(doc.Processes) != 1 || len(pids) == 1 && doc.Processes[0].Pid != pids[0] {
		t.Errorf("--report: schema %q, processes %+v; seen %v", doc.Schema, doc.Processes, pids)
	}
	if len(doc.Diagnoses) == 0 || doc.Diagnoses[0].ID != "lock-order-cycle" || !slices.Contains(doc.Diagnoses[0].Tids, ab) || !slices.Contains(doc.Diagnoses[0].Tids, ba) {
		t.Errorf("--report diagnoses: %+v, want lock-order-cycle of %d and %d", doc.Diagnoses, ab, ba)
	}

	// GITHUB_STEP_SUMMARY gets Markdown, after what was there.
	md, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(md), "# an earlier step\n### hangdoc: ") || !strings.Contains(string(md), "**lock-order-cycle**") || strings.Contains(string(md), "\x1b") {
		t.Errorf("GITHUB_STEP_SUMMARY:\n%s", md)
	}
}

// A tree: the parent waits on a forked child stuck on a lock inherited
// from the parent. The child's deadlock is named; both are killed.
func TestRunTimeoutForkedTree(t *testing.T) {
	patient.RequirePtrace(t)
	patient.RequireTool(t, "g++")
	lib := patient.BuildLib(t, "fakeaccel.c", patient.O2g...)
	bin := patient.Build(t, "devicepool_fork.cpp", append(slices.Clone(patient.O2g), patient.Link(lib, "fakeaccel")...)...)
	r := startRun(t, nil, "run", "--timeout", "5s", "--", bin)
	code := r.wait(t, 60*time.Second)
	stderr := r.stderr.String()
	if code != exitRunHang {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitRunHang, stderr)
	}
	child := r.int(t, "child")
	verdict, _, _ := strings.Cut(stderr[strings.Index(stderr, "\n")+1:], "\n")
	if !strings.Contains(verdict, "fork-inherited-lock") || !strings.Contains(stderr, strconv.Itoa(child)) {
		t.Errorf("verdict %q, want fork-inherited-lock naming the child %d\nstderr:\n%s", verdict, child, stderr)
	}
	if !strings.Contains(stderr, "sampling its 2 processes") || !strings.Contains(stderr, "(2 processes)") {
		t.Errorf("stderr does not say 2 processes were sampled and killed:\n%s", stderr)
	}
	r.checkTreeGone(t, child)
}

// SIGTERM to hangdoc, with no timeout: the report comes all the same,
// then the tree is killed.
func TestRunSIGTERM(t *testing.T) {
	patient.RequirePtrace(t)
	r := startRun(t, nil, "run", "--samples", "2", "--interval", "100ms", "--", patient.Build(t, "abba.c", patient.O2g...))
	r.line(t, "ready", 10*time.Second)
	// Both threads asleep on their second lock before the signal.
	if kids := attach.Descendants(r.cmd.Process.Pid); len(kids) == 0 || !patient.Asleep(kids[0], 10*time.Second) {
		t.Fatalf("the patient (%v) is not asleep 10 s after ready", kids)
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t, 60*time.Second)
	stderr := r.stderr.String()
	if code != exitRunHang {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitRunHang, stderr)
	}
	for _, want := range []string{"got SIGTERM", "lock-order-cycle", "killed pid"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	r.checkTreeGone(t)
}

// SIGINT, and nothing is hung: 128+2, after the report.
func TestRunSIGINTNothingHung(t *testing.T) {
	patient.RequirePtrace(t)
	r := startRun(t, nil, "run", "--samples", "1", "--", patient.Build(t, "sleeper.c", patient.O2g...))
	r.line(t, "ready", 10*time.Second)
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := r.wait(t, 60*time.Second)
	stderr := r.stderr.String()
	if code != exitSignal+int(syscall.SIGINT) {
		t.Fatalf("exit %d, want 130\nstderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "got SIGINT") || !strings.Contains(stderr, "sleeping") || !strings.Contains(stderr, "exit 130: nothing looks hung") {
		t.Errorf("stderr:\n%s", stderr)
	}
	r.checkTreeGone(t)
}

// Timed out, nothing hung: 124. Processes that left the group (setsid)
// and an orphan (its parent exited) are diagnosed and killed too.
func TestRunTimeoutOrphans(t *testing.T) {
	patient.RequirePtrace(t)
	rep := filepath.Join(t.TempDir(), "report.json")
	script := `(setsid sleep 300 & echo orphan=$!); setsid sleep 301 & echo leaver=$!; sleep 302`
	r := startRun(t, nil, "run", "--timeout", "2s", "--samples", "1", "--report", rep, "--format", "json", "--", "sh", "-c", script)
	code := r.wait(t, 60*time.Second)
	stderr := r.stderr.String()
	if code != exitTimeout {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitTimeout, stderr)
	}
	orphan, leaver := r.int(t, "orphan"), r.int(t, "leaver")
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Processes []struct {
			Pid int `json:"pid"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var reported []int
	for _, p := range doc.Processes {
		reported = append(reported, p.Pid)
	}
	for _, pid := range []int{orphan, leaver} {
		if !slices.Contains(reported, pid) {
			t.Errorf("pid %d not in the report (processes %v)\nstderr:\n%s", pid, reported, stderr)
		}
	}
	if len(reported) != 4 {
		t.Errorf("report of %v, want sh, its sleep and the two that left", reported)
	}
	r.checkTreeGone(t, orphan, leaver)
}

// --- a command that finishes in time is left alone ---------------------

func TestRunExactBytes(t *testing.T) {
	bin := hangdocBin(t)
	cmd := exec.Command(bin, "run", "--timeout", "1m", "--", "sh", "-c", `cat; printf 'out\000\001\033[0m'; printf '\377err' >&2; exit 7`)
	cmd.Stdin = strings.NewReader("from stdin\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("got %v, want exit status 7", err)
	}
	if got, want := out.String(), "from stdin\nout\x00\x01\x1b[0m"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got, want := errOut.String(), "\xfferr"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

func TestRunSignalDeath(t *testing.T) {
	r := startRun(t, nil, "run", "--", "sh", "-c", "kill -TERM $$")
	if code := r.wait(t, 30*time.Second); code != 143 {
		t.Errorf("exit %d, want 143 (128+SIGTERM)\nstderr:\n%s", code, r.stderr.String())
	}
	if r.stderr.String() != "" || r.stdout.Len() != 0 {
		t.Errorf("hangdoc wrote %q / %q", r.stdout.String(), r.stderr.String())
	}
}

func TestRunInProcess(t *testing.T) {
	out, errOut, code, err := runIn("run", "sh", "-c", "echo hi; echo there >&2; exit 3")
	if err != nil || code != 3 || out != "hi\n" || errOut != "there\n" {
		t.Errorf("got %q, %q, exit %d, %v", out, errOut, code, err)
	}
	_, _, code, err = runIn("run", "--", "sh", "-c", "kill -KILL $$")
	if err != nil || code != 128+9 {
		t.Errorf("SIGKILL: exit %d, %v, want 137", code, err)
	}
	// A command finishing in time leaves no --report behind.
	rep := filepath.Join(t.TempDir(), "r.txt")
	if _, _, code, _ = runIn("run", "--report", rep, "true"); code != 0 {
		t.Errorf("true: exit %d", code)
	}
	if _, err := os.Stat(rep); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--report %s after a command that finished: %v", rep, err)
	}
}

func TestRunNotFound(t *testing.T) {
	for _, c := range []struct {
		argv []string
		code int
	}{
		{[]string{"hangdoc-no-such-command"}, exitNotFound},
		{[]string{"/nonexistent/cmd"}, exitNotFound},
		{[]string{os.TempDir()}, exitCannot}, // a directory
	} {
		_, errOut, code, err := runIn(append([]string{"run", "--"}, c.argv...)...)
		if err != nil || code != c.code || strings.Count(errOut, "\n") != 1 {
			t.Errorf("run %s: exit %d, %v, stderr %q; want exit %d and one line", c.argv, code, err, errOut, c.code)
		}
	}
}

// --- usage ------------------------------------------------------------

func TestRunUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run"},
		{"run", "--"},
		{"run", "--timeout", "3s"},
		{"run", "--timeout", "-1s", "--", "true"},
		{"run", "--timeout", "soon", "--", "true"},
		{"run", "--samples", "0", "--", "true"},
		{"run", "--interval", "0s", "--", "true"},
		{"run", "--format", "xml", "--", "true"},
		{"run", "--color", "sometimes", "--", "true"},
		{"run", "--report", filepath.Join(dir, "no", "such", "dir", "r.json"), "--", "true"},
	} {
		_, _, code, err := runIn(args...)
		if code != exitRunUsage || err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("hangdoc %s: exit %d, %v; want a one-line usage error", strings.Join(args, " "), code, err)
		}
	}
	// No file was left behind by the --report check; the flags after
	// CMD are CMD's.
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left: %v", ents)
	}
	if out, _, code, err := runIn("run", "sh", "-c", `echo "$@"`, "sh", "--timeout", "x"); err != nil || code != 0 || out != "--timeout x\n" {
		t.Errorf("flags after CMD: %q, exit %d, %v", out, code, err)
	}
}

func TestRunUsageBinary(t *testing.T) {
	cmd := exec.Command(hangdocBin(t), "run")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitRunUsage {
		t.Fatalf("hangdoc run: %v, want exit %d", err, exitRunUsage)
	}
	if out.Len() != 0 || strings.Count(errOut.String(), "\n") != 1 || !strings.HasPrefix(errOut.String(), "hangdoc: run needs a command") {
		t.Errorf("stdout %q, stderr %q: want one line on stderr", out.String(), errOut.String())
	}
}

func TestRunHelpDocumentsExitCodes(t *testing.T) {
	out, _, _, err := runIn("run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"121 ", "122 ", "124 ", "125 ", "128+N", "130 SIGINT, 143 SIGTERM", "usage error", "could not be analysed", "126, 127", "GITHUB_STEP_SUMMARY", "--report FILE"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help lacks %q:\n%s", want, out)
		}
	}
	root, _, _, _ := runIn("--help")
	if !strings.Contains(root, "121 a hang was named") || !strings.Contains(root, "124") || !strings.Contains(root, "run") {
		t.Errorf("hangdoc --help does not document run's exit codes:\n%s", root)
	}
}

func TestCodeSpanAndQuoting(t *testing.T) {
	for in, want := range map[string]string{
		"go test ./...": "`go test ./...`",
		"a`b":           "``a`b``",
		"``x":           "``` ``x ```",
	} {
		if got := report.CodeSpan(in); got != want {
			t.Errorf("report.CodeSpan(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := shellJoin([]string{"sh", "-c", "echo it's\x1b[2J"}), `sh -c 'echo it'\''s`; !strings.HasPrefix(got, want) || strings.Contains(got, "\x1b") {
		t.Errorf("shellJoin = %q, want %q… without the escape", got, want)
	}
}

// attachTree leaves out what Attach would refuse (a pid that is gone, a
// zombie) and samples the rest; with nothing left, it says the tree is
// gone.
func TestAttachTreeLeavesOut(t *testing.T) {
	patient.RequirePtrace(t)
	// sleep with a zombie child: sh forks true, then execs sleep, which
	// never reaps it.
	cmd := exec.Command("sh", "-c", "true & exec sleep 100")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	patient.StartKept(t, cmd)
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	var pids []int
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		pids = attach.Descendants(cmd.Process.Pid)
		if len(pids) == 2 {
			if info, err := attach.Stat(pids[1]); err == nil && !info.Alive() {
				if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pids[0])); string(comm) == "sleep\n" {
					break
				}
			}
		}
		if time.Now().After(end) {
			t.Fatalf("tree %v: want sleep and its zombie child", pids)
		}
	}
	gone := 1 << 22 // above pid_max's default: no such process
	snap, notes, err := attachTree(t.Context(), append(pids, gone), attach.Options{Samples: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Processes) != 1 || snap.Processes[0].Pid != pids[0] {
		t.Errorf("sampled %d processes, want sleep %d alone", len(snap.Processes), pids[0])
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "zombie") || !strings.Contains(notes[1], strconv.Itoa(gone)) {
		t.Errorf("notes %q: want the zombie and the missing pid", notes)
	}
	if _, _, err := attachTree(t.Context(), []int{pids[1], gone}, attach.Options{Samples: 1}); !errors.Is(err, errTreeGone) {
		t.Errorf("nothing to sample: %v, want errTreeGone", err)
	}
	denied := &attach.Error{Pid: pids[0], Kind: attach.ErrPermission, Err: fmt.Errorf("pid %d: ptrace: operation not permitted", pids[0])}
	if got := failingPid(pids[:1], fmt.Errorf("sampling: %w", denied)); got != pids[0] {
		t.Errorf("failingPid = %d, want the pid the error is about, %d", got, pids[0])
	}
	if got := failingPid(pids[:1], fmt.Errorf("pid %d: something else", pids[0])); got != 0 {
		t.Errorf("failingPid of an error that only names a pid in its text = %d, want 0 (no pid is read from a message)", got)
	}
}

// A tree hangdoc may not read: exit 3, one line saying why, and the tree
// is killed all the same. hangdoc runs as nobody; CMD, exec'd from a
// binary nobody may run but not read, is not dumpable, so its /proc
// files are root's.
func TestRunCannotAnalyse(t *testing.T) {
	if os.Geteuid() != 0 {
		patient.Missing(t, "needs root to run hangdoc as another user")
	}
	dir, err := os.MkdirTemp("", "hangdoc-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	copyFile := func(from, to string, mode os.FileMode) {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(to, mode) // past the umask
	}
	hd, sleep := filepath.Join(dir, "hangdoc"), filepath.Join(dir, "sleep")
	copyFile(hangdocBin(t), hd, 0o755)
	sleepPath := patient.RequireTool(t, "sleep")
	copyFile(sleepPath, sleep, 0o711)

	cmd := exec.Command(hd, "run", "--timeout", "1s", "--", sleep, "100")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}, Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var sleepPid int
	var sleepInfo attach.ProcInfo
	for end := time.Now().Add(10 * time.Second); sleepPid == 0 && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if kids := attach.Descendants(cmd.Process.Pid); len(kids) == 2 {
			sleepPid = kids[1]
			sleepInfo, _ = attach.Stat(sleepPid)
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitRunAnalysis {
		t.Fatalf("got %v, want exit %d\nstderr:\n%s", err, exitRunAnalysis, stderr.String())
	}
	if !strings.Contains(stderr.String(), "ptrace not permitted") || !strings.Contains(stderr.String(), "(1 process); exit 122") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	if sleepPid == 0 {
		t.Fatal("never saw the command below hangdoc")
	}
	if info, err := attach.Stat(sleepPid); err == nil && info.Start == sleepInfo.Start {
		syscall.Kill(sleepPid, syscall.SIGKILL)
		t.Errorf("pid %d outlived hangdoc run (state %c)", sleepPid, info.State)
	}
}
