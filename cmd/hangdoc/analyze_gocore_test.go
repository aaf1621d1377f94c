package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// TestAnalyzeGoCore: `hangdoc analyze CORE --exe BIN` on a gcore of the
// Go ABBA patient reads its goroutines, as `hangdoc attach` does, and
// leads with the same verdict: lock-order-cycle, medium, both holders
// named; the JSON says the snapshot came from a core and holds the OS
// threads apart.
func TestAnalyzeGoCore(t *testing.T) {
	patient.RequirePtrace(t)
	bin := patient.BuildGo(t, "abba")
	p := patient.StartGo(t, bin)
	core := patient.Gcore(t, p.Pid, t.TempDir())

	out, errOut, code, err := runWith("", "analyze", core, "--exe", bin)
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, errOut)
	}
	first := strings.SplitN(out, "\n", 2)[0]
	if code != exitHang || !strings.HasPrefix(first, "lock-order-cycle (medium confidence)") || strings.Count(first, "which goroutine") != 2 {
		t.Fatalf("exit %d, first line %q: want lock-order-cycle at medium naming both holders", code, first)
	}
	if !strings.Contains(out, "goroutines in") || !strings.Contains(out, "main.(*bank).transfer") {
		t.Errorf("the report shows no goroutines:\n%s", out)
	}

	out, errOut, _, err = runWith("", "analyze", "--format", "json", "--exe", bin, core)
	if err != nil {
		t.Fatalf("analyze --format json: %v\n%s", err, errOut)
	}
	var doc struct {
		Source    string `json:"source"`
		Processes []struct {
			Pid     int    `json:"pid"`
			Runtime string `json:"runtime"`
			Threads []struct {
				Goroutine *struct {
					ID     int    `json:"id"`
					Status string `json:"status"`
				} `json:"goroutine"`
			} `json:"threads"`
			OSThreads []struct {
				Tid int `json:"tid"`
			} `json:"os_threads"`
		} `json:"processes"`
		Diagnoses []struct {
			ID string `json:"id"`
		} `json:"diagnoses"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	tasks, err := p.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	if doc.Source != "core" || len(doc.Processes) != 1 || doc.Processes[0].Pid != p.Pid || !strings.HasPrefix(doc.Processes[0].Runtime, "go1.") ||
		len(doc.Processes[0].OSThreads) != len(tasks) || len(doc.Diagnoses) == 0 || doc.Diagnoses[0].ID != "lock-order-cycle" {
		t.Fatalf("json: source %q, %d processes, diagnoses %v: want a core of pid %d with a Go runtime, %d OS threads, lock-order-cycle first",
			doc.Source, len(doc.Processes), doc.Diagnoses, p.Pid, len(tasks))
	}
	locks := 0
	for _, th := range doc.Processes[0].Threads {
		if th.Goroutine == nil {
			t.Fatalf("json: a thread that is not a goroutine among the goroutines")
		}
		if th.Goroutine.Status == "sync.Mutex.Lock" {
			locks++
		}
	}
	if locks != 2 {
		t.Errorf("json: %d goroutines in sync.Mutex.Lock, want 2", locks)
	}
}

// TestAnalyzeGoCoreWithoutDWARF: the core of a Go program linked
// without debug information (as go test links) gives its goroutines,
// read from the runtime's structures, and the verdict of the DWARF
// build; a note says how they were read.
func TestAnalyzeGoCoreWithoutDWARF(t *testing.T) {
	patient.RequirePtrace(t)
	bin := patient.BuildGo(t, "abba", "-ldflags=-s -w")
	p := patient.StartGo(t, bin)
	core := patient.Gcore(t, p.Pid, t.TempDir())
	out, errOut, _, err := runWith("", "analyze", core, "--exe", bin)
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, errOut)
	}
	if !strings.HasPrefix(out, "lock-order-cycle (medium confidence): 2 goroutines") || !strings.Contains(out, "goroutines read without DWARF") {
		t.Errorf("want the goroutines' lock-order-cycle and a note that they were read without DWARF:\n%s", out)
	}
}

// TestAnalyzeGoCoreWrongBuild: --exe naming another Go build than the
// one the core's process ran is said so in one line, whether the OS
// threads then unwind or not; its debug information is never used to
// read the goroutines.
func TestAnalyzeGoCoreWrongBuild(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.StartGo(t, patient.BuildGo(t, "abba"))
	core := patient.Gcore(t, p.Pid, t.TempDir())
	other := patient.BuildGo(t, "leak")
	out, _, _, err := runWith("", "analyze", core, "--exe", other)
	said := out
	if err != nil {
		said = err.Error()
		if strings.Contains(said, "\n") {
			t.Errorf("a multi-line error: %q", said)
		}
	}
	if !strings.Contains(said, other+" is not the build the process ran") || strings.Contains(said, "internal error") || strings.Contains(said, "goroutines in") {
		t.Fatalf("want a note that --exe is another build, and no goroutines:\n%s", said)
	}
}
