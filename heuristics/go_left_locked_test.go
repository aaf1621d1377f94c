package heuristics_test

import (
	"bytes"
	"context"
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

// leftLocked is testdata/gorun/leftlocked: three goroutines wait for a
// mutex an early return left locked, beside an idle HTTP accept loop.
// Its frames print no pointers (optimised code), and a goroutine on the
// network could hold a lock across its call, so the claim needs long
// waits: the committed dump was taken after 70 s ("1 minutes"); a live
// read must see the waits in every sample over a second (the CLI's
// default: 3 samples 500 ms apart). Not in goPatients: a dump taken the
// moment the live read ends has waits under a minute, and gets no claim.
var leftLocked = goPatientExpect{patient: "leftlocked", dump: "leftlocked_sigquit.txt", id: "orphaned-lock", sameObject: true, named: []goNamed{
	{"sync.Mutex.Lock", "main.(*store).get", "s.mu.Lock() // waits for ever"},
	{"sync.Mutex.Lock", "main.(*store).get", "s.mu.Lock() // waits for ever"},
	{"sync.Mutex.Lock", "main.(*store).get", "s.mu.Lock() // waits for ever"},
}}

func TestGoLeftLocked(t *testing.T) {
	d := checkGoPatient(t, leftLocked, leftLockedDump(t, func(s string) string { return s }), 0)
	if d.Confidence != heuristics.Low {
		t.Errorf("confidence %s for a holder ruled out by where goroutines wait: want low", d.Confidence)
	}
	fresh := leftLockedDump(t, func(s string) string { return strings.ReplaceAll(s, "Lock, 1 minutes]", "Lock]") })
	if s := leftLockedClaim(fresh); s != "" {
		t.Errorf("waits under a minute beside a network wait: %s", s)
	}
}

func TestGoLeftLockedLive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a Go patient")
	}
	patient.RequirePtrace(t)
	p := patient.StartGo(t, patient.BuildGo(t, leftLocked.patient))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	snap, err := attach.Attach(ctx, []int{p.Pid}, attach.Options{Samples: 3, Interval: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	d := checkGoPatient(t, leftLocked, snap, 0)
	t.Logf("%s %s: %s", d.ID, d.Confidence, d.Summary)
	short, err := attach.Attach(ctx, []int{p.Pid}, attach.Options{Samples: 2, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	if s := leftLockedClaim(short); s != "" {
		t.Errorf("waits seen over 100 ms only: %s", s)
	}
}

// leftLockedDump is testdata/gorun/leftlocked's SIGQUIT dump (made here
// by the Go runtime, gen.sh), with edit applied to its text.
func leftLockedDump(t *testing.T, edit func(string) string) *stacks.Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", "goroutines", "leftlocked_sigquit.txt"))
	if err != nil {
		t.Fatal(err)
	}
	snap, _, _, err := stacks.Parse(bytes.NewReader([]byte(edit(string(b)))), "goroutines")
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func leftLockedClaim(snap *stacks.Snapshot) string {
	for _, d := range heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses {
		if d.ID == "orphaned-lock" {
			return d.Summary
		}
	}
	return ""
}

// The mutex's waiters print no pointer to it (optimised frames: "0x0?"),
// so that no goroutine holds it rests on where the others wait: one that
// waits on a channel (or runs) may hold it, and a paste without goroutine
// 1 may have left the holder out. Each edit turns the rule silent.
func TestGoLeftLockedStaysSilent(t *testing.T) {
	if s := leftLockedClaim(leftLockedDump(t, func(s string) string { return s })); s == "" {
		t.Fatal("the unedited dump gets no orphaned-lock claim: the test would prove nothing")
	}
	edits := map[string]func(string) string{
		"a goroutine blocked on a channel send could hold it": func(s string) string {
			s = strings.Replace(s, "[select (no cases)", "[chan send", 1)
			return strings.Replace(s, "runtime.block()\n\t/usr/local/go/src/runtime/select.go:104", "runtime.chansend1(0x2a1f6e5aeef8?, 0x0?)\n\t/usr/local/go/src/runtime/chan.go:161", 1)
		},
		"a goroutine that runs could hold it": func(s string) string {
			s = strings.Replace(s, "[select (no cases), 1 minutes]", "[running]", 1)
			return strings.Replace(s, "runtime.block()", "main.spin()", 1)
		},
		"without goroutine 1 or the runtime's header the dump may be a fragment": func(s string) string {
			s = strings.Replace(s, "SIGQUIT: quit\nPC=0x48f0a1 m=0 sigcode=0\n", "", 1)
			return strings.Replace(s, "goroutine 1 gp=", "goroutine 99991 gp=", 1)
		},
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			if s := leftLockedClaim(leftLockedDump(t, edit)); s != "" {
				t.Errorf("claimed: %s", s)
			}
		})
	}
}
