package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// goAnalyzeCases are the Go patients and the verdict `hangdoc analyze`
// leads with on their goroutine dumps (heuristics/go_patients_test.go
// checks the goroutines, objects and lines behind each).
var goAnalyzeCases = []struct {
	patient, dump, id string
	hang              bool
}{
	{"abba", "abba_sigquit.txt", "lock-order-cycle", true},
	{"rlock", "rlock_sigquit.txt", "self-deadlock", true},
	{"chansend", "chansend_sigquit.txt", "channel-no-partner", true},
	{"waitgroup", "waitgroup_sigquit.txt", "waitgroup-never-done", true},
	{"leak", "leak_sigquit.txt", "goroutine-leak", true},
	{"server", "server_sigquit.txt", "", false}, // the control: progressing or io-wait when run fresh
}

// storedControl is the server control's verdict on its committed dump:
// Diagnose is deterministic on a fixed input, so it is exact there.
const storedControl = "progressing"

// analyzeGoJSON runs `hangdoc analyze --format json file` and returns the
// diagnoses' ids and whether the exit code said a hang was named.
func analyzeGoJSON(t *testing.T, file string) (ids []string, hang bool) {
	t.Helper()
	out, errOut, code, err := runWith("", "analyze", "--format", "json", file)
	if err != nil {
		t.Fatalf("analyze %s: %v\n%s", file, err, errOut)
	}
	var doc struct {
		Source    string `json:"source"`
		Diagnoses []struct {
			ID       string `json:"id"`
			Deadlock bool   `json:"deadlock"`
		} `json:"diagnoses"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("analyze %s: not JSON: %v", file, err)
	}
	if doc.Source != "goroutines" {
		t.Errorf("analyze %s: source %q, want goroutines", file, doc.Source)
	}
	for _, d := range doc.Diagnoses {
		ids = append(ids, d.ID)
	}
	return ids, code == exitHang
}

func checkGoAnalyze(t *testing.T, file, want string, wantHang bool) {
	t.Helper()
	ids, hang := analyzeGoJSON(t, file)
	if len(ids) == 0 {
		t.Fatalf("%s: no diagnosis", file)
	}
	switch {
	case want == "" && ids[0] != "progressing" && ids[0] != "io-wait":
		t.Errorf("%s: leads with %s, want progressing or io-wait (all: %v)", file, ids[0], ids)
	case want != "" && ids[0] != want:
		t.Errorf("%s: leads with %s, want %s (all: %v)", file, ids[0], want, ids)
	}
	if hang != wantHang {
		t.Errorf("%s: exit code says hang=%v, want %v", file, hang, wantHang)
	}
}

// TestAnalyzeGoDumps: the committed SIGQUIT dump of each Go patient.
func TestAnalyzeGoDumps(t *testing.T) {
	for _, c := range goAnalyzeCases {
		t.Run(c.patient, func(t *testing.T) {
			want := c.id
			if want == "" {
				want = storedControl
			}
			checkGoAnalyze(t, dump("goroutines/"+c.dump), want, c.hang)
		})
	}
}

// TestAnalyzeGoDumpsFresh: the dump of each patient built and run now,
// written to a file as a user would save it.
func TestAnalyzeGoDumpsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the Go patients")
	}
	for _, c := range goAnalyzeCases {
		t.Run(c.patient, func(t *testing.T) {
			bin := patient.BuildGo(t, c.patient)
			file := filepath.Join(t.TempDir(), c.patient+".txt")
			if err := os.WriteFile(file, patient.GoDump(t, bin, 600*time.Millisecond), 0o644); err != nil {
				t.Fatal(err)
			}
			checkGoAnalyze(t, file, c.id, c.hang)
		})
	}
}
