package python

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// TestLayout311 proves the 3.11 table: it compiles a program against the
// installed 3.11 headers (internal ones included) that prints offsetof()
// of every field the table uses, and compares.
func TestLayout311(t *testing.T) {
	const inc = "/usr/include/python3.11"
	if _, err := os.Stat(filepath.Join(inc, "internal", "pycore_frame.h")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CPython 3.11 headers missing (%v): scripts/install-deps.sh installs python3-dev", err)
		}
		t.Skipf("CPython 3.11 headers missing: %v", err)
	}
	gcc := patient.RequireTool(t, "gcc")
	l := layout311
	fields := []struct {
		expr string
		got  uint64
	}{
		{"offsetof(_PyRuntimeState, interpreters.head)", l.runtimeInterpHead},
		{"offsetof(_PyRuntimeState, interpreters.main)", l.runtimeInterpHead + 8},
		{"offsetof(_PyRuntimeState, ceval.gil)", l.gil.off},
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
		{"offsetof(_PyInterpreterFrame, is_entry)", l.frameIsEntry},
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
	var src strings.Builder
	src.WriteString("#define Py_BUILD_CORE 1\n#include <Python.h>\n#include <stddef.h>\n#include <stdio.h>\n" +
		"#include \"internal/pycore_runtime.h\"\n#include \"internal/pycore_interp.h\"\n#include \"internal/pycore_frame.h\"\n#include \"internal/pycore_code.h\"\n" +
		"int main(void) {\n")
	for _, f := range fields {
		src.WriteString("\tprintf(\"%zu\\n\", (size_t)(" + f.expr + "));\n")
	}
	src.WriteString("\t/* FRAME_OWNED_BY_THREAD etc. and the unicode state bits the reader decodes */\n")
	src.WriteString("\tPyASCIIObject a = {0}; a.state.kind = 4; a.state.compact = 1; a.state.ascii = 1;\n")
	src.WriteString("\tunsigned int s; memcpy(&s, &a.state, 4); printf(\"%u\\n\", s);\n")
	src.WriteString("\treturn 0;\n}\n")
	dir := t.TempDir()
	c := filepath.Join(dir, "offsets.c")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "offsets")
	if out, err := exec.Command(gcc, "-I", inc, "-o", bin, c).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(fields)+1 {
		t.Fatalf("%d values printed, want %d", len(lines), len(fields)+1)
	}
	for i, f := range fields {
		want, _ := strconv.ParseUint(lines[i], 10, 64)
		if f.got != want {
			t.Errorf("%s = %d, the table says %d", f.expr, want, f.got)
		}
	}
	// kind 4 at bits 2-4, compact bit 5, ascii bit 6.
	if want := strconv.Itoa(4<<2 | 1<<5 | 1<<6); lines[len(fields)] != want {
		t.Errorf("state bits %s, want %s", lines[len(fields)], want)
	}
}
