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
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
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

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
