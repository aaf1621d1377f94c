package module

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// TestInlinesMatchEuAddr2line: at the midpoints of 150 of libc's
// functions (its DWARF is libc6-dbg's), the inlined functions Inlines
// finds are those `eu-addr2line -i` finds: as many, the same names, the
// same call sites, innermost first.
func TestInlinesMatchEuAddr2line(t *testing.T) {
	tool := patient.RequireTool(t, "eu-addr2line")
	f, err := OpenWith(libcPath, Options{OriginalPath: libcPath})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.DebugPath == "" {
		patient.Missing(t, "%s has no debug file: install libc6-dbg", libcPath)
	}
	var pcs []uint64
	i := 0
	for _, sym := range f.Symbols() {
		if sym.Func && sym.Size > 16 {
			if i%10 == 0 && len(pcs) < 150 {
				pcs = append(pcs, sym.Value+sym.Size/2)
			}
			i++
		}
	}
	args := []string{"-a", "-i", "-f", "-e", libcPath}
	for _, pc := range pcs {
		args = append(args, fmt.Sprintf("%#x", pc))
	}
	out, err := exec.Command(tool, args...).Output()
	if err != nil {
		t.Fatalf("eu-addr2line: %v", err)
	}
	// Per address: its line, then name and file:line:column pairs, the
	// innermost first ("allocate_stack inlined at …/pthread_create.c:650:13
	// in pthread_create").
	blocks := map[uint64][]string{}
	var cur uint64
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, "0x") {
			fmt.Sscanf(l, "0x%x", &cur)
			continue
		}
		blocks[cur] = append(blocks[cur], l)
	}
	inlined := 0
	for _, pc := range pcs {
		b := blocks[pc]
		_, got := f.Inlines(pc)
		if len(b)%2 != 0 || len(b)/2-1 != len(got) {
			t.Errorf("%#x: %d inlined, eu-addr2line %d: ours %+v, theirs %q", pc, len(got), len(b)/2-1, got, b)
			continue
		}
		if len(got) > 0 {
			inlined++
		}
		for k, in := range got {
			name, _, _ := strings.Cut(b[2*k], " inlined at ")
			file, line := fileLine(b[2*k+3])
			if in.Func != name || filepath.Base(in.CallFile) != filepath.Base(file) || in.CallLine != line {
				t.Errorf("%#x #%d: %s called at %s:%d, eu-addr2line: %s called at %s:%d", pc, k, in.Func, in.CallFile, in.CallLine, name, file, line)
			}
		}
	}
	if inlined < 10 {
		t.Errorf("only %d of %d addresses in inlined code: the sample proves little", inlined, len(pcs))
	}
	t.Logf("%d addresses, %d in inlined code", len(pcs), inlined)
}

// fileLine splits eu-addr2line's "file:line:column".
func fileLine(s string) (string, int) {
	parts := strings.Split(s, ":")
	if len(parts) < 3 {
		return s, 0
	}
	var line int
	fmt.Sscanf(parts[len(parts)-2], "%d", &line)
	return strings.Join(parts[:len(parts)-2], ":"), line
}
