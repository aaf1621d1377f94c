package stacks

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repairGolden is what a golden of testdata/repair holds: Parse's
// result on a damaged real paste.
type repairGolden struct {
	Format   string    `json:"format"`
	Skipped  []Skipped `json:"skipped"`
	Snapshot *Snapshot `json:"snapshot"`
}

// repairUndo takes each fixture's damage off by hand, by its name's
// first word, for the comparison with the repaired read.
var repairUndo = map[string]func(string) string{
	"compose": func(s string) string {
		return regexp.MustCompile(`(?m)^[\w-]+_1  \| ?`).ReplaceAllLiteralString(s, "")
	},
	"mdescape": func(s string) string {
		s = regexp.MustCompile("\\\\([()\\[\\]{}_#.*+:,!<>|~=`-])").ReplaceAllString(s, "$1")
		return strings.NewReplacer("&nbsp;", " ", "&#8203;", "").Replace(s)
	},
}

// TestRepairGoldens: every damaged real paste of testdata/repair reads
// as its golden says, and as the same paste with its damage taken off
// by hand reads, threads and frames.
func TestRepairGoldens(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "repair", "*.txt"))
	if len(files) == 0 {
		t.Fatal("no pastes under testdata/repair")
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			snap, skipped, format, err := Parse(bytes.NewReader(in), "")
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(repairGolden{format, skipped, snap}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(file, ".txt") + ".golden.json"
			if *updateGoldens {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if want, err := os.ReadFile(golden); err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			} else if !bytes.Equal(got, want) {
				t.Errorf("differs from %s; rerun with -update if intended\n%s", filepath.Base(golden), firstLineDiff(string(want), string(got)))
			}
			undo := repairUndo[strings.Split(name, "_")[0]]
			if undo == nil {
				t.Fatalf("no undo for %s", name)
			}
			want, _ := readShape(t, undo(string(in)))
			if shape, notes := readShape(t, string(in)); shape != want {
				t.Errorf("reads otherwise than undamaged:\n%s", firstLineDiff(want, shape))
			} else if len(notes) == 0 || !hasNoteWith(notes, "repaired: ") {
				t.Errorf("no repair said: %q", notes)
			}
		})
	}
}

// FuzzMdUnescape: only a backslash before a mark Markdown escapes comes
// off, never one before a quote or a backslash (a C string's own), and a
// line of one escape is left as it is until the input showed escaping.
func FuzzMdUnescape(f *testing.F) {
	for _, s := range []string{`\#0  \_\_lll\_lock\_wait \(\)`, `#1  f (s="a\"b\\n")`, `C:\x\y`, `\(gdb\) bt`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		rp := &repairer{fixes: map[string]*repairCount{}}
		got := rp.mdUnescape(1, line)
		if strings.Count(got, `\"`) < strings.Count(line, `\"`) && !strings.Contains(line, `\\`) {
			t.Fatalf("%q: %q lost a quote's backslash", line, got)
		}
		if len(got) > len(line) || strings.ReplaceAll(got, `\`, "") != strings.ReplaceAll(line, `\`, "") {
			t.Fatalf("%q: %q changed more than backslashes", line, got)
		}
		if strings.Count(line, `\`) <= 1 && got != line {
			t.Fatalf("%q: %q: one escape alone was taken off", line, got)
		}
	})
}

// FuzzComposePrefix: whatever follows it, a compose prefix comes off and
// leaves the line as the container wrote it; and nothing but a prefix
// is ever taken off a line.
func FuzzComposePrefix(f *testing.F) {
	for _, s := range []string{"goroutine 1 [running]:", "", "  /go/src/x.go:3 +0x1", "db_1   | nested", "#0  0x1 in f ()", "a_1 |"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n\r") {
			return
		}
		rp := &repairer{fixes: map[string]*repairCount{}}
		for _, prefix := range []string{"web_1  | ", "empirica-prod-1  | "} {
			if got := rp.composePrefix(1, prefix+line); got != line {
				t.Fatalf("%q: %q", prefix+line, got)
			}
		}
		if got := rp.composePrefix(1, line); !strings.HasSuffix(line, got) || got != line && !composeRE.MatchString(line) {
			t.Fatalf("%q: %q", line, got)
		}
	})
}
