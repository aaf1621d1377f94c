package python

import (
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// lineScript prints, for every code object of a module with long, short,
// no-column and no-location entries (loops, comprehensions, try/except,
// a function 300 lines down, multi-line calls), its first line, its
// co_linetable and CPython's own answer (co_lines) for each instruction.
const lineScript = `
import json, sys, types
src = '''
def f(a,
      b):
    x = [i * 2
         for i in range(a)
         if i % 3]
    try:
        y = {k: v for k, v in zip(x, x)}
    except (KeyError,
            ValueError) as e:
        raise RuntimeError(
            "no") from e
    finally:
        pass
    while a > 0:
        a -= 1
    return (x,
            y)
''' + "\n" * 300 + '''
class C:
    def g(self):
        return sum(
            j for j in range(10))
async def h():
    async with open("x") as fh:
        pass
'''
out = []
def walk(co):
    lines = []
    for start, end, line in co.co_lines():
        for off in range(start, end, 2):
            lines.append([off, -1 if line is None else line])
    out.append({"name": co.co_qualname, "first": co.co_firstlineno,
                "table": co.co_linetable.hex(), "lines": lines})
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            walk(c)
walk(compile(src, "t.py", "exec"))
json.dump(out, sys.stdout)
`

// TestLineTableMatchesCPython decodes real location tables and compares
// the line of every instruction with CPython's co_lines().
func TestLineTableMatchesCPython(t *testing.T) {
	py := patient.RequireTool(t, patient.Python)
	out, err := exec.Command(py, "-c", lineScript).Output()
	if err != nil {
		t.Fatalf("%s: %v", py, err)
	}
	var codes []struct {
		Name  string
		First int
		Table string
		Lines [][2]int
	}
	if err := json.Unmarshal(out, &codes); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, c := range codes {
		table, _ := hex.DecodeString(c.Table)
		for _, ol := range c.Lines {
			checked++
			if got := addrToLine(table, c.First, int64(ol[0])); got != ol[1] {
				t.Errorf("%s: offset %d: line %d, CPython says %d", c.Name, ol[0], got, ol[1])
			}
		}
	}
	if len(codes) < 5 || checked < 100 {
		t.Errorf("only %d code objects, %d instructions checked", len(codes), checked)
	}
	// Before the first instruction (a frame not started) is the first line.
	if got := addrToLine(nil, 42, -2); got != 42 {
		t.Errorf("offset -2: %d, want 42", got)
	}
}

func TestSignedVarint(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want int
	}{
		{[]byte{0}, 0}, {[]byte{2}, 1}, {[]byte{3}, -1}, {[]byte{62}, 31},
		{[]byte{64 | 0, 1}, 32}, {[]byte{64 | 1, 1}, -32}, {[]byte{64 | 10, 64 | 3, 2}, (10 | 3<<6 | 2<<12) >> 1},
	} {
		if got := signedVarint(c.b); got != c.want {
			t.Errorf("signedVarint(%v) = %d, want %d", c.b, got, c.want)
		}
	}
}
