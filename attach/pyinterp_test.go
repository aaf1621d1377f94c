package attach

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// pyInterp is one CPython the live Python tests run their patients with.
type pyInterp struct {
	Path    string // the interpreter
	Version string // "3.12.1", from the interpreter itself
	Include string // its headers (Python.h), "" when absent
}

// pyenvRoot is where pyenv keeps interpreters: $PYENV_ROOT, or ~/.pyenv.
func pyenvRoot() string {
	if r := os.Getenv("PYENV_ROOT"); r != "" {
		return r
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".pyenv")
}

var (
	pyenvOnce    sync.Once
	pyenvInterps []pyInterp
)

// pyenvPythons returns the pyenv CPythons of pattern (a glob of version
// directories, "3.1[1-9]*") that run, with their versions.
func pyenvPythons(pattern string) []pyInterp {
	paths, _ := filepath.Glob(filepath.Join(pyenvRoot(), "versions", pattern, "bin", "python3"))
	sort.Strings(paths)
	var out []pyInterp
	for _, p := range paths {
		b, err := exec.Command(p, "-c", "import platform, sysconfig; print(platform.python_implementation(), platform.python_version(), sysconfig.get_paths()['include'])").Output()
		f := strings.Fields(string(b))
		if err != nil || len(f) != 3 || f[0] != "CPython" {
			continue
		}
		in := pyInterp{Path: p, Version: f[1]}
		if _, err := os.Stat(filepath.Join(f[2], "Python.h")); err == nil {
			in.Include = f[2]
		}
		out = append(out, in)
	}
	return out
}

// forEachPython runs test once per CPython, as a subtest named by its
// version: Debian's patient.Python (3.11.2) always (a missing one fails
// the subtest when CI=true), then each pyenv CPython 3.11 or later found
// under pyenvRoot. Those are not installed by the project's scripts, so
// their absence skips, even in CI.
func forEachPython(t *testing.T, test func(t *testing.T, py pyInterp)) {
	name := "debian"
	b, err := exec.Command(patient.Python, "-c", "import platform; print(platform.python_version())").Output()
	version := strings.TrimSpace(string(b))
	if err == nil {
		name += "-" + version
	}
	t.Run(name, func(t *testing.T) {
		patient.RequireTool(t, patient.Python)
		if err != nil {
			t.Fatalf("%s: %v", patient.Python, err)
		}
		test(t, pyInterp{Path: patient.Python, Version: version, Include: "/usr/include/python3.11"})
	})
	pyenvOnce.Do(func() { pyenvInterps = pyenvPythons("3.1[1-9]*") })
	if len(pyenvInterps) == 0 {
		t.Run("pyenv", func(t *testing.T) {
			t.Skipf("no pyenv CPython 3.11+ under %s/versions: those interpreters are not installed by scripts/install-deps.sh; only Debian's %s was tested", pyenvRoot(), patient.Python)
		})
		return
	}
	for _, py := range pyenvInterps {
		t.Run(py.Version, func(t *testing.T) { test(t, py) })
	}
}
