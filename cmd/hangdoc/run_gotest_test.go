package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// go119 is Debian's Go 1.19 (golang-1.19-go, scripts/install-deps.sh).
const go119 = "/usr/lib/go-1.19/bin/go"

// TestRunGoTestDeadlock: the README's CI line on a real Go test that
// deadlocks, `hangdoc run -- go test .` without -ldflags, with Go 1.26
// and Go 1.19. go test links its test binary with -s -w (no DWARF, no
// symbol table); hangdoc reads its goroutines from the runtime's
// structures and names the deadlock with them: the worker waits to lock
// the store's sync.Mutex in put, the test waits to receive from the
// channel the worker never closes (all-goroutines-asleep, as for the
// DWARF build: every goroutine of the test binary is blocked).
func TestRunGoTestDeadlock(t *testing.T) {
	patient.RequirePtrace(t)
	for _, gobin := range []string{patient.RequireTool(t, "go"), go119} {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(gobin))), func(t *testing.T) {
			if _, err := os.Stat(gobin); err != nil {
				patient.Missing(t, "%s (golang-1.19-go)", gobin)
			}
			dir := t.TempDir()
			src := filepath.Join("..", "..", "testdata", "gorun", "testtimeout")
			for from, to := range map[string]string{"hang_test.go": "hang_test.go", "go.mod.txt": "go.mod"} {
				b, err := os.ReadFile(filepath.Join(src, from))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// -vet=off: go test's vet is not under test, and under load
			// (three suites side by side) it kept the test binary from
			// starting before the timeout ran out
			env := []string{"GOTOOLCHAIN=local", "GOFLAGS=-vet=off"}
			// Build once first so that the timeout below runs out on the
			// test, not on the compiler.
			warm := exec.Command(gobin, "test", "-run", "^$", ".")
			warm.Dir, warm.Env = dir, append(os.Environ(), env...)
			if out, err := warm.CombinedOutput(); err != nil {
				t.Fatalf("go test -run '^$': %v\n%s", err, out)
			}
			start := time.Now()
			r := startRun(t, env, "run", "--timeout", "8s", "--samples", "2", "--interval", "200ms", "--",
				"sh", "-c", `cd "$0" && exec "$1" test .`, dir, gobin)
			code := r.wait(t, 90*time.Second)
			stderr := r.stderr.String()
			first := strings.SplitN(stderr, "\n", 3)[1]
			t.Logf("exit %d after %v; first line: %s", code, time.Since(start).Round(time.Millisecond), first)
			// The go command's own goroutines are read too; none of them
			// may take the headline from the test's deadlock (its
			// signal.Notify receiver is no orphan, on Go 1.19 too, whose
			// dumps do not name the goroutine that started one).
			if strings.Contains(first, "cmd/go/") || !strings.HasPrefix(first, "all-goroutines-asleep") {
				t.Errorf("first line %q: want the test binary's all-goroutines-asleep", first)
			}
			if code != exitRunHang {
				t.Errorf("exit %d, want %d (a hang named)", code, exitRunHang)
			}
			for _, want := range []*regexp.Regexp{
				regexp.MustCompile(`goroutine \d+ waits to lock sync\.Mutex 0x[0-9a-f]+ in .example\.com/hang\.\(\*store\)\.put. at \S+hang_test\.go:18`),
				regexp.MustCompile(`goroutine \d+ waits to receive from channel 0x[0-9a-f]+ in .example\.com/hang\.TestStore. at \S+hang_test\.go:31`),
				regexp.MustCompile(`goroutines read without DWARF`),
			} {
				if !want.MatchString(stderr) {
					t.Errorf("the report does not say %q:\n%s", want, stderr)
				}
			}
			if strings.Contains(stderr, "hang.test") && strings.Contains(stderr, "read as OS threads") {
				t.Errorf("the test binary was read as OS threads:\n%s", stderr)
			}
			r.checkTreeGone(t)
		})
	}
}
