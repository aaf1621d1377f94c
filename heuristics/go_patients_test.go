package heuristics_test

// The Go patients (testdata/gorun) and what hangdoc must say of each,
// whatever read them: their committed SIGQUIT dumps
// (TestGoPatientDumps), a dump taken now from the running patient
// (TestGoPatientsLive), and a live attach (checkGoPatient takes any
// snapshot: a live test calls it with what attach.Attach read).

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// goNamed is a goroutine a diagnosis must name: its status, the
// function that waits (the frame past the sync and runtime ones) and
// the source line of that wait, given as a snippet of the patient's
// main.go so that editing the patient does not break the test.
type goNamed struct {
	status, fn, at string
}

// goPatientExpect is what hangdoc must say of one Go patient.
type goPatientExpect struct {
	patient string // testdata/gorun/<patient>
	dump    string // its SIGQUIT dump under testdata/dumps/goroutines
	id      string // the top diagnosis; "" for the control
	// calm are the verdicts the control may get (no deadlock among them).
	calm []string
	// named are the goroutines the diagnosis names, in its Tids order; a
	// single entry with many set stands for that many alike (the leak).
	named []goNamed
	many  int
	// sameObject: the named goroutines wait on one object (an RWMutex);
	// otherwise each on its own (the ABBA's two mutexes).
	sameObject bool
	env        []string // for the patient run by the live test
}

var goPatients = []goPatientExpect{
	{patient: "abba", dump: "abba_sigquit.txt", id: "lock-order-cycle", named: []goNamed{
		{"sync.Mutex.Lock", "main.(*bank).transfer", "to.mu.Lock()"},
		{"sync.Mutex.Lock", "main.(*bank).transfer", "to.mu.Lock()"},
	}},
	{patient: "rlock", dump: "rlock_sigquit.txt", id: "self-deadlock", sameObject: true, named: []goNamed{
		{"sync.RWMutex.RLock", "main.(*cache).lookup", "c.mu.RLock() // recursive"},
		{"sync.RWMutex.Lock", "main.(*cache).set", "c.mu.Lock()"},
	}},
	{patient: "chansend", dump: "chansend_sigquit.txt", id: "channel-no-partner", named: []goNamed{
		{"chan send", "main.fetch", "out <- result"},
	}},
	{patient: "waitgroup", dump: "waitgroup_sigquit.txt", id: "waitgroup-never-done", named: []goNamed{
		{"sync.WaitGroup.Wait", "main.main", "wg.Wait()"},
	}},
	// The committed dump has 1,000 goroutines (HANGDOC_LEAK_N=1000 in
	// gen.sh); the live run has the patient's 10,000.
	{patient: "leak", dump: "leak_sigquit.txt", id: "goroutine-leak", many: 1000, named: []goNamed{
		{"select", "main.(*server).handle.func1", "select {"},
	}},
	{patient: "server", dump: "server_sigquit.txt", calm: []string{"progressing", "io-wait"}},
}

// checkGoPatient diagnoses snap, a snapshot of patient e (from a dump
// or a live attach), and checks the verdict: the id first, the
// goroutines named with their status, waiting function, file:line and
// object, the confidence a holder inference deserves; for the control,
// no deadlock. It returns the top diagnosis.
func checkGoPatient(t *testing.T, e goPatientExpect, snap *stacks.Snapshot, many int) heuristics.Diagnosis {
	t.Helper()
	ds := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	if len(ds) == 0 {
		t.Fatalf("%s: no diagnosis", e.patient)
	}
	top := ds[0]
	if e.id == "" {
		for _, d := range ds {
			if d.Deadlock {
				t.Errorf("%s (control): deadlock claimed: %s %s: %s", e.patient, d.ID, d.Confidence, d.Summary)
			}
		}
		ok := false
		for _, c := range e.calm {
			ok = ok || top.ID == c
		}
		if !ok {
			t.Errorf("%s (control): top verdict %s, want one of %v: %s", e.patient, top.ID, e.calm, top.Summary)
		}
		return top
	}
	if top.ID != e.id || !top.Deadlock {
		t.Fatalf("%s: top diagnosis %s (deadlock %v), want %s: %s\nall: %s", e.patient, top.ID, top.Deadlock, e.id, top.Summary, goIDs(ds))
	}
	if (e.id == "lock-order-cycle" || e.id == "self-deadlock") && top.Confidence == heuristics.High {
		t.Errorf("%s: confidence high for a holder only inferred", e.patient)
	}
	goroutines := map[int]*stacks.Thread{}
	for _, p := range snap.Processes {
		for _, th := range p.Threads {
			if th.Goroutine() != nil {
				goroutines[th.Tid] = th
			}
		}
	}
	want := len(e.named)
	if e.many > 0 {
		want = many
	}
	if len(top.Tids) != want {
		t.Fatalf("%s: %d goroutines named (%v…), want %d", e.patient, len(top.Tids), top.Tids[:min(5, len(top.Tids))], want)
	}
	objects := map[uint64]bool{}
	for i, tid := range top.Tids {
		n := e.named[min(i, len(e.named)-1)]
		th := goroutines[tid]
		if th == nil {
			t.Fatalf("%s: goroutine %d named is not in the snapshot", e.patient, tid)
		}
		g := th.Goroutine()
		w := stacks.GoWaitOf(th.Stack)
		if g.Status != n.status || w.Caller >= len(th.Stack) {
			t.Fatalf("%s: goroutine %d: status %q, wait %+v; want %q", e.patient, tid, g.Status, w, n.status)
		}
		f := th.Stack[w.Caller]
		line := patient.GoSourceLine(t, e.patient, n.at)
		if f.Func != n.fn || f.Line != line || !strings.HasSuffix(f.File, e.patient+"/main.go") {
			t.Fatalf("%s: goroutine %d waits in %s at %s:%d, want %s at %s/main.go:%d", e.patient, tid, f.Func, f.File, f.Line, n.fn, e.patient, line)
		}
		if i < 4 && !strings.Contains(strings.Join(top.Chain, "\n"), fmt.Sprintf("%s/main.go:%d", e.patient, line)) {
			t.Errorf("%s: the chain does not give %s/main.go:%d:\n%s", e.patient, e.patient, line, strings.Join(top.Chain, "\n"))
		}
		if g.Status == "select" {
			continue // a select waits on several channels: no one object
		}
		if g.Object == 0 {
			t.Errorf("%s: goroutine %d: the object it waits on is not known", e.patient, tid)
			continue
		}
		objects[g.Object] = true
		if obj := fmt.Sprintf("%#x", g.Object); !strings.Contains(top.Summary, obj) {
			t.Errorf("%s: summary does not name %s: %s", e.patient, obj, top.Summary)
		}
	}
	switch {
	case e.sameObject && len(objects) != 1:
		t.Errorf("%s: the goroutines wait on %d objects, want one", e.patient, len(objects))
	case !e.sameObject && e.many == 0 && len(objects) != len(e.named):
		t.Errorf("%s: the goroutines wait on %d objects, want %d", e.patient, len(objects), len(e.named))
	}
	if top.Fix == "" || len(top.Evidence) == 0 {
		t.Errorf("%s: no fix or no evidence: %+v", e.patient, top)
	}
	return top
}

func goIDs(ds []heuristics.Diagnosis) string {
	var s []string
	for _, d := range ds {
		s = append(s, d.ID+" "+d.Confidence)
	}
	return strings.Join(s, ", ")
}

// TestGoPatientDumps: each patient's committed SIGQUIT dump, read as
// `hangdoc analyze` reads it (format sniffed), gets the patient's verdict.
func TestGoPatientDumps(t *testing.T) {
	for _, e := range goPatients {
		t.Run(e.patient, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", "goroutines", e.dump))
			if err != nil {
				t.Fatal(err)
			}
			snap, _, format, err := stacks.Parse(bytes.NewReader(b), "")
			if err != nil || format != "goroutines" {
				t.Fatalf("parse: format %q, %v", format, err)
			}
			top := checkGoPatient(t, e, snap, e.many)
			t.Logf("%s %s: %s", top.ID, top.Confidence, top.Summary)
		})
	}
}

// TestGoPatientsLive builds each patient with the machine's go, runs it
// until it is stuck, attaches to it (the live goroutine reader, through
// delve, read-only) and checks the verdict; then it takes the same
// process's goroutine dump with SIGQUIT and checks that the dump, as
// `hangdoc analyze` reads it, gets the same id and names the same
// goroutines.
func TestGoPatientsLive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the Go patients")
	}
	patient.RequirePtrace(t)
	for _, e := range goPatients {
		t.Run(e.patient, func(t *testing.T) {
			bin := patient.BuildGo(t, e.patient)
			p := patient.StartGo(t, bin, append([]string{"GOTRACEBACK=all"}, e.env...)...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			snap, err := attach.Attach(ctx, []int{p.Pid}, liveOpts)
			if err != nil {
				t.Fatalf("attach: %v", err)
			}
			took := time.Since(start)
			if rt := snap.Processes[0].Runtime; !strings.HasPrefix(rt, "go1.") {
				t.Fatalf("attach did not take the Go path: runtime %q", rt)
			}
			many := 10000 // the patient's default
			live := checkGoPatient(t, e, snap, many)
			t.Logf("attach (%v): %s %s: %s", took.Round(time.Millisecond), live.ID, live.Confidence, live.Summary)

			dump := p.QuitDump(t)
			dsnap, _, format, err := stacks.Parse(bytes.NewReader(dump), "")
			if err != nil || format != "goroutines" {
				t.Fatalf("parse the dump: format %q, %v", format, err)
			}
			fromDump := checkGoPatient(t, e, dsnap, many)
			// A control's calm verdict may differ: a live attach compares
			// samples (a busy server's goroutines move: progressing), one
			// dump cannot (io-wait); both are among e.calm, checked above.
			if e.id != "" && fromDump.ID != live.ID {
				t.Errorf("the dump says %s, the live attach %s", fromDump.ID, live.ID)
			}
			// The live read gives the frame arguments a dump prints, so
			// a holder is inferred alike (the control's calm verdicts
			// rest on CPU samples, which a dump has not).
			if e.id != "" && fromDump.Confidence != live.Confidence {
				// Go counts a goroutine's wait in whole minutes: a dump
				// taken after the wait crossed one (the attach took long
				// under load) may rightly be surer than the attach was.
				if lm, dm := waitMinutes(snap, live), waitMinutes(dsnap, fromDump); lm != dm {
					t.Logf("confidence %s live (waits of %d min) and %s in the dump (%d min): the minute mark passed between them", live.Confidence, lm, fromDump.Confidence, dm)
				} else {
					t.Errorf("the dump says %s %s, the live attach %s", fromDump.ID, fromDump.Confidence, live.Confidence)
				}
			}
			if e.id != "" && e.many == 0 && fmt.Sprint(fromDump.Tids) != fmt.Sprint(live.Tids) {
				t.Errorf("the dump names goroutines %v, the live attach %v", fromDump.Tids, live.Tids)
			}
		})
	}
}

// waitMinutes is how long the first goroutine a diagnosis names had waited,
// as the runtime recorded it.
func waitMinutes(snap *stacks.Snapshot, d heuristics.Diagnosis) int {
	if len(d.Tids) == 0 || len(snap.Processes) == 0 {
		return -1
	}
	if th := snap.Processes[0].ThreadByTid(d.Tids[0]); th != nil && th.Runtime != nil {
		return th.Runtime.WaitMinutes
	}
	return -1
}

// TestGoPatientDumpsWithoutArgs: a reader that fills Runtime.Object
// but no frame arguments (a live read may not evaluate them) still gets
// each patient's id; the holders are then not inferred, and the
// confidence says so.
func TestGoPatientDumpsWithoutArgs(t *testing.T) {
	for _, e := range goPatients {
		t.Run(e.patient, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", "goroutines", e.dump))
			if err != nil {
				t.Fatal(err)
			}
			snap, _, err := stacks.ParseGoroutines(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			snap.Evidence.Arguments = false
			for _, p := range snap.Processes {
				for _, th := range p.Threads {
					for i := range th.Stack {
						th.Stack[i].Args = nil
					}
				}
			}
			top := checkGoPatient(t, e, snap, e.many)
			if (e.id == "lock-order-cycle" || e.id == "self-deadlock") && top.Confidence != heuristics.Low {
				t.Errorf("%s: confidence %s without the arguments that show a holder", e.patient, top.Confidence)
			}
			t.Logf("%s %s: %s", top.ID, top.Confidence, top.Summary)
		})
	}
}
