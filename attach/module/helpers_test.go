package module

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// The test programs are compiled once per test binary into buildDir.
var (
	buildDir  string
	buildOnce sync.Once
	buildErr  error
	bins      = map[string]string{} // variant → path
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// variants of the test programs: name → build commands (run in buildDir;
// $S is testdata, $D buildDir).
var variants = []struct{ name, cmd string }{
	{"O2", "gcc -O2 -o prog_O2 $S/prog.c"},
	{"O0g", "gcc -O0 -g -o prog_O0g $S/prog.c"},
	{"stripped", "cp prog_O2 prog_stripped && strip prog_stripped"},
	{"nopie", "gcc -O2 -g -no-pie -fno-pie -o prog_nopie $S/prog.c"},
	{"lib", "gcc -O2 -g -shared -fPIC -o libshared.so $S/shared.c"},
	{"libstripped", "cp libshared.so libshared_stripped.so && strip libshared_stripped.so"},
	{"withlib", "gcc -O2 -DWITH_SHARED -o prog_withlib $S/prog.c -L$D -lshared -Wl,-rpath,$D"},
	{"cxx", "g++ -O2 -o prog_cxx $S/worker.cc"},
	// PLT stubs in .plt.sec, after an endbr64 (Intel IBT), not in .plt.
	{"ibt", "gcc -O2 -fcf-protection=full -Wl,-z,ibtplt -o prog_ibt $S/prog.c"},
	// A separate debug file found by build id (under a fake root) …
	{"buildid", "gcc -O0 -g -Wl,--build-id -o prog_buildid $S/prog.c && objcopy --only-keep-debug prog_buildid prog_buildid.debug && strip prog_buildid"},
	// … and one found by .gnu_debuglink next to the file (no build id).
	{"debuglink", "gcc -O0 -g -Wl,--build-id=none -o prog_debuglink $S/prog.c && objcopy --only-keep-debug prog_debuglink prog_debuglink.debug && strip prog_debuglink && objcopy --add-gnu-debuglink=prog_debuglink.debug prog_debuglink"},
}

// progs builds the test programs (once) and returns variant → path.
func progs(t testing.TB) map[string]string {
	t.Helper()
	if missing := missingTool(); missing != "" {
		patient.Missing(t, "%s not installed (scripts/install-deps.sh installs it)", missing)
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "hangdoc-module-")
		if buildErr != nil {
			return
		}
		src, _ := filepath.Abs("testdata")
		for _, v := range variants {
			cmd := exec.Command("sh", "-c", v.cmd)
			cmd.Dir = buildDir
			cmd.Env = append(os.Environ(), "S="+src, "D="+buildDir)
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("%s: %v\n%s", v.cmd, err, out)
				return
			}
		}
		for name, file := range map[string]string{
			"O2": "prog_O2", "O0g": "prog_O0g", "stripped": "prog_stripped", "nopie": "prog_nopie",
			"lib": "libshared.so", "libstripped": "libshared_stripped.so", "withlib": "prog_withlib",
			"cxx": "prog_cxx", "buildid": "prog_buildid", "buildid.debug": "prog_buildid.debug",
			"debuglink": "prog_debuglink", "ibt": "prog_ibt",
		} {
			bins[name] = filepath.Join(buildDir, file)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bins
}

// missingTool names a build tool the tests need that is not installed.
func missingTool() string {
	for _, tool := range []string{"gcc", "g++", "strip", "objcopy", "nm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool
		}
	}
	return ""
}

// nmAddrs returns the defined symbols of path by name, as nm sees them.
func nmAddrs(t testing.TB, path string) map[string]uint64 {
	t.Helper()
	out, err := exec.Command("nm", "--defined-only", path).Output()
	if err != nil {
		t.Fatalf("nm %s: %v", path, err)
	}
	m := map[string]uint64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		v, err := strconv.ParseUint(f[0], 16, 64)
		if err == nil {
			m[f[2]] = v
		}
	}
	return m
}

// startPatient runs a test program in its waiting mode and returns its
// pid and the addresses it printed; it is killed when the test ends.
func startPatient(t *testing.T, path string) (int, map[string]uint64) {
	t.Helper()
	cmd := exec.Command(path, "wait")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addrs := map[string]uint64{}
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 1 && f[0] == "ready" {
				done <- nil
				return
			}
			if len(f) != 2 {
				continue
			}
			v, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
			if err != nil {
				done <- fmt.Errorf("bad line %q", sc.Text())
				return
			}
			addrs[f[0]] = v
		}
		done <- fmt.Errorf("patient exited before it was ready: %v", sc.Err())
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("patient did not get ready in 10s")
	}
	return cmd.Process.Pid, addrs
}

// copyFile copies src into a new file in dir and returns its path.
func copyFile(t testing.TB, src, dir string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// sectionRange returns the file offset and size of a section.
func sectionRange(t testing.TB, path, name string) (off, size uint64) {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	s := ef.Section(name)
	if s == nil {
		t.Fatalf("%s: no %s", path, name)
	}
	return s.Offset, s.Size
}

// kernelMappings returns the mappings the kernel would make for f loaded
// at bias: one per PT_LOAD, from the page holding its first byte. This
// ignores RELRO splitting; tests that need it use live processes.
func kernelMappings(f *File, bias uint64, path string) []Mapping {
	const page = 4096
	var out []Mapping
	for _, p := range f.Loads {
		start := (p.Vaddr + bias) &^ (page - 1)
		end := (p.Vaddr + bias + p.Memsz + page - 1) &^ (page - 1)
		perms := []byte("---p")
		if p.Flags&elf.PF_R != 0 {
			perms[0] = 'r'
		}
		if p.Flags&elf.PF_W != 0 {
			perms[1] = 'w'
		}
		if p.Flags&elf.PF_X != 0 {
			perms[2] = 'x'
		}
		out = append(out, Mapping{Start: start, End: end, Offset: p.Off &^ (page - 1), Perms: string(perms), Inode: 1, Path: path})
	}
	return out
}

func hasNote(notes []string, sub string) bool {
	for _, n := range notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}
