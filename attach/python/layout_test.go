package python

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/attach/procmem"
	"github.com/hangdoc/hangdoc/internal/patient"
	"golang.org/x/sys/unix"
)

// headerSet is one CPython's headers (internal ones included) and the
// interpreter they belong to.
type headerSet struct {
	name    string // subtest name: "debian-3.11", "3.12.1"
	include string // the directory holding Python.h
	python  string // the interpreter, "" when not needed
	minor   int
}

// installedHeaders returns Debian's 3.11 headers (required in CI:
// scripts/install-deps.sh installs python3-dev) and those of every pyenv
// CPython 3.11 or later (optional: the project's scripts do not install
// pyenv, so their absence skips even in CI).
func installedHeaders() []headerSet {
	sets := []headerSet{{name: "debian-3.11", include: "/usr/include/python3.11", minor: 11}}
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".pyenv")
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "versions", "3.1[1-9]*", "include", "python3.1[1-9]"))
	sort.Strings(dirs)
	for _, d := range dirs {
		v := filepath.Base(filepath.Dir(filepath.Dir(d))) // "3.12.1"
		minor, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "python3."))
		sets = append(sets, headerSet{name: v, include: d, python: filepath.Join(filepath.Dir(filepath.Dir(d)), "bin", "python3"), minor: minor})
	}
	return sets
}

// requireHeaders skips (Debian's: fails when CI=true) when a set's
// internal headers are missing.
func requireHeaders(t *testing.T, h headerSet) {
	if _, err := os.Stat(filepath.Join(h.include, "internal", "pycore_frame.h")); err != nil {
		if h.python == "" && os.Getenv("CI") == "true" {
			t.Fatalf("CPython %s headers missing (%v): scripts/install-deps.sh installs python3-dev", h.name, err)
		}
		t.Skipf("CPython %s headers missing: %v", h.name, err)
	}
}

// offsetCheck is one C expression and the value the reader uses for it.
type offsetCheck struct {
	expr string
	got  uint64
}

// TestLayoutHeaders proves the 3.11 and 3.12 tables: for every CPython
// whose headers are installed it compiles a program (Py_BUILD_CORE,
// internal headers) that prints offsetof() of every field the table
// uses, and compares. For 3.13 and later it compares the _Py_DebugOffsets
// the reader parses out of a running interpreter with offsetof() of the
// same fields, and the table's field order (debug313) with the header's.
func TestLayoutHeaders(t *testing.T) {
	gcc := patient.RequireTool(t, "gcc")
	if len(installedHeaders()) == 1 {
		t.Run("pyenv", func(t *testing.T) {
			t.Skip("no pyenv CPython 3.11+ headers: those interpreters are not installed by scripts/install-deps.sh; only Debian's 3.11 headers were checked")
		})
	}
	for _, h := range installedHeaders() {
		t.Run(h.name, func(t *testing.T) {
			requireHeaders(t, h)
			var checks []offsetCheck
			switch {
			case h.minor == 11:
				checks = checks311(layout311)
			case h.minor == 12:
				checks = checks312(layout312)
			case h.minor == 13:
				checks = checksDebug313(t, h)
			default:
				t.Skipf("CPython 3.%d: no check written for its _Py_DebugOffsets layout yet", h.minor)
			}
			compareOffsets(t, gcc, h.include, checks)
		})
	}
}

func commonChecks(l layout) []offsetCheck {
	return []offsetCheck{
		{"offsetof(_PyRuntimeState, interpreters.head)", l.runtimeInterpHead},
		{"offsetof(_PyRuntimeState, interpreters.main)", l.runtimeInterpHead + 8},
		{"offsetof(struct _gil_runtime_state, locked)", l.gil.locked},
		{"offsetof(struct _gil_runtime_state, last_holder)", l.gil.holder},
		{"offsetof(struct _gil_runtime_state, cond)", l.gil.cond},
		{"sizeof(pthread_cond_t)", condSize},
		{"offsetof(PyInterpreterState, next)", l.interpNext},
		{"offsetof(PyInterpreterState, threads.head)", l.interpThreadsHead},
		{"offsetof(PyThreadState, next)", l.tstateNext},
		{"offsetof(PyThreadState, cframe)", l.tstateCFrame},
		{"offsetof(PyThreadState, thread_id)", l.tstateThreadID},
		{"offsetof(PyThreadState, native_thread_id)", l.tstateNativeID},
		{"offsetof(_PyCFrame, current_frame)", l.cframeCurrentFrame},
		{"offsetof(_PyInterpreterFrame, f_code)", l.frameCode},
		{"offsetof(_PyInterpreterFrame, previous)", l.framePrevious},
		{"offsetof(_PyInterpreterFrame, prev_instr)", l.frameInstr},
		{"offsetof(_PyInterpreterFrame, owner)", l.frameOwner},
		{"offsetof(PyCodeObject, co_filename)", l.codeFilename},
		{"offsetof(PyCodeObject, co_name)", l.codeName},
		{"offsetof(PyCodeObject, co_qualname)", l.codeQualname},
		{"offsetof(PyCodeObject, co_firstlineno)", l.codeFirstLineno},
		{"offsetof(PyCodeObject, co_linetable)", l.codeLinetable},
		{"offsetof(PyCodeObject, co_code_adaptive)", l.codeAdaptive},
		{"offsetof(PyASCIIObject, state)", l.unicodeState},
		{"offsetof(PyASCIIObject, length)", l.unicodeLength},
		{"sizeof(PyASCIIObject)", l.asciiSize},
		{"sizeof(PyCompactUnicodeObject)", l.compactSize},
		{"offsetof(PyBytesObject, ob_base.ob_size)", l.bytesSize},
		{"offsetof(PyBytesObject, ob_sval)", l.bytesData},
	}
}

func checks311(l layout) []offsetCheck {
	return append(commonChecks(l),
		offsetCheck{"offsetof(_PyRuntimeState, ceval.gil)", l.gil.off},
		offsetCheck{"offsetof(_PyInterpreterFrame, is_entry)", l.frameIsEntry})
}

func checks312(l layout) []offsetCheck {
	return append(commonChecks(l),
		offsetCheck{"offsetof(PyInterpreterState, ceval.gil)", l.gil.off},
		offsetCheck{"offsetof(PyInterpreterState, _gil)", l.gil.own},
		offsetCheck{"FRAME_OWNED_BY_CSTACK", uint64(l.ownerCStack)})
}

// debugMember maps a debug313 field name to its member of _Py_DebugOffsets.
func debugMember(name string) string {
	sections := map[string]string{
		"rt": "runtime_state", "is": "interpreter_state", "ts": "thread_state", "fr": "interpreter_frame",
		"co": "code_object", "ob": "pyobject", "ty": "type_object", "tu": "tuple_object", "li": "list_object",
		"se": "set_object", "di": "dict_object", "fl": "float_object", "lo": "long_object", "by": "bytes_object", "un": "unicode_object",
	}
	if sec, field, ok := strings.Cut(name, "."); ok {
		return sections[sec] + "." + field
	}
	return name
}

// checksDebug313 reads _Py_DebugOffsets from a running 3.13 interpreter,
// parses it as the reader does and lists each value the reader uses with
// the offsetof() it must equal, and every field's place in the table.
func checksDebug313(t *testing.T, h headerSet) []offsetCheck {
	raw := debugOffsetsOf(t, h.python)
	l, v, err := parseDebugOffsets(raw)
	if err != nil {
		t.Fatalf("%s: %v", h.python, err)
	}
	if v.Minor() != h.minor {
		t.Fatalf("%s: debug offsets say %s", h.python, v)
	}
	checks := []offsetCheck{
		{"offsetof(_PyRuntimeState, interpreters.head)", l.runtimeInterpHead},
		{"offsetof(_PyRuntimeState, interpreters.main)", l.runtimeInterpHead + 8},
		{"offsetof(PyInterpreterState, next)", l.interpNext},
		{"offsetof(PyInterpreterState, threads.head)", l.interpThreadsHead},
		{"offsetof(PyInterpreterState, _gil.locked)", l.gil.locked},
		{"offsetof(PyInterpreterState, _gil.last_holder)", l.gil.holder},
		{"offsetof(PyInterpreterState, _gil.cond)", l.gil.cond},
		{"sizeof(pthread_cond_t)", condSize},
		{"offsetof(PyThreadState, next)", l.tstateNext},
		{"offsetof(PyThreadState, current_frame)", l.tstateCurrentFrame},
		{"offsetof(PyThreadState, thread_id)", l.tstateThreadID},
		{"offsetof(PyThreadState, native_thread_id)", l.tstateNativeID},
		{"offsetof(_PyInterpreterFrame, f_executable)", l.frameCode},
		{"offsetof(_PyInterpreterFrame, previous)", l.framePrevious},
		{"offsetof(_PyInterpreterFrame, instr_ptr)", l.frameInstr},
		{"offsetof(_PyInterpreterFrame, owner)", l.frameOwner},
		{"FRAME_OWNED_BY_CSTACK", uint64(l.ownerCStack)},
		{"offsetof(PyCodeObject, co_filename)", l.codeFilename},
		{"offsetof(PyCodeObject, co_name)", l.codeName},
		{"offsetof(PyCodeObject, co_qualname)", l.codeQualname},
		{"offsetof(PyCodeObject, co_firstlineno)", l.codeFirstLineno},
		{"offsetof(PyCodeObject, co_linetable)", l.codeLinetable},
		{"offsetof(PyCodeObject, co_code_adaptive)", l.codeAdaptive},
		{"offsetof(PyASCIIObject, state)", l.unicodeState},
		{"offsetof(PyASCIIObject, length)", l.unicodeLength},
		{"sizeof(PyASCIIObject)", l.asciiSize},
		{"sizeof(PyCompactUnicodeObject)", l.compactSize},
		{"offsetof(PyBytesObject, ob_base.ob_size)", l.bytesSize},
		{"offsetof(PyBytesObject, ob_sval)", l.bytesData},
	}
	for i, n := range debug313 {
		checks = append(checks, offsetCheck{"offsetof(_Py_DebugOffsets, " + debugMember(n) + ")", uint64(8 * i)})
	}
	return checks
}

// debugOffsetsOf starts python (idle on its stdin) and reads the start of
// its _PyRuntime out of /proc/PID/mem.
func debugOffsetsOf(t *testing.T, python string) []byte {
	cmd := exec.Command(python, "-c", "import sys; print('ready', flush=True); sys.stdin.read()")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", python, err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("%s did not start: %q", python, line)
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[2] != "00000000" {
			continue
		}
		ef, err := elf.Open(f[5])
		if err != nil {
			continue
		}
		syms, _ := ef.DynamicSymbols()
		ef.Close()
		for _, s := range syms {
			if s.Name != "_PyRuntime" {
				continue
			}
			start, _ := strconv.ParseUint(strings.Split(f[0], "-")[0], 16, 64)
			if ef.Type == elf.ET_EXEC {
				start = 0
			}
			raw := make([]byte, maxDebugOffsets)
			if _, err := procmem.Read(cmd.Process.Pid, raw, start+s.Value); err != nil {
				if errors.Is(err, unix.EPERM) {
					patient.Missing(t, "cannot read the interpreter's memory: %v", err)
				}
				t.Fatalf("%s: _PyRuntime in %s: %v", python, f[5], err)
			}
			return raw
		}
	}
	t.Fatalf("%s: no module with a _PyRuntime symbol in its maps", python)
	return nil
}

// compareOffsets compiles and runs the checks against include and
// compares; it also checks the unicode state bits the reader decodes.
func compareOffsets(t *testing.T, gcc, include string, checks []offsetCheck) {
	var src strings.Builder
	src.WriteString("#define Py_BUILD_CORE 1\n#include <Python.h>\n#include <stddef.h>\n#include <stdio.h>\n#include <string.h>\n" +
		"#include \"internal/pycore_runtime.h\"\n#include \"internal/pycore_interp.h\"\n#include \"internal/pycore_frame.h\"\n#include \"internal/pycore_code.h\"\n" +
		"int main(void) {\n")
	for _, c := range checks {
		src.WriteString("\tprintf(\"%zu\\n\", (size_t)(" + c.expr + "));\n")
	}
	// kind 4 at bits 2-4, compact bit 5, ascii bit 6.
	src.WriteString("\tPyASCIIObject a = {0}; a.state.kind = 4; a.state.compact = 1; a.state.ascii = 1;\n")
	src.WriteString("\tunsigned int s; memcpy(&s, &a.state, 4); printf(\"%u\\n\", s);\n")
	src.WriteString("\treturn 0;\n}\n")
	dir := t.TempDir()
	c := filepath.Join(dir, "offsets.c")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "offsets")
	if out, err := exec.Command(gcc, "-I", include, "-o", bin, c).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(checks)+1 {
		t.Fatalf("%d values printed, want %d", len(lines), len(checks)+1)
	}
	for i, c := range checks {
		want, _ := strconv.ParseUint(lines[i], 10, 64)
		if c.got != want {
			t.Errorf("%s = %d, the reader uses %d", c.expr, want, c.got)
		}
	}
	if want := strconv.Itoa(4<<2 | 1<<5 | 1<<6); lines[len(checks)] != want {
		t.Errorf("state bits %s, want %s", lines[len(checks)], want)
	}
	if !t.Failed() {
		t.Logf("%d offsets agree with %s", len(checks), include)
	}
}
