package heuristics_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// ThreadSanitizer's own report, run here: the tsan_lock_order patient
// takes two mutexes in both orders, TSan prints its lock-order-inversion
// report, and `hangdoc analyze` on that report reads the tool's claim as
// a lock-order cycle naming the code that took the locks.
func TestTSanLockOrderReport(t *testing.T) {
	lib, err := exec.Command("gcc", "-print-file-name=libtsan.so").Output()
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(lib)), "/") {
		patient.Missing(t, "libtsan (ThreadSanitizer's runtime, Debian libtsan2): gcc -print-file-name=libtsan.so found none")
	}
	if _, err := os.Stat(strings.TrimSpace(string(lib))); err != nil {
		patient.Missing(t, "libtsan (ThreadSanitizer's runtime, Debian libtsan2): %v", err)
	}
	bin := patient.Build(t, "tsan_lock_order.c", "-g", "-O1", "-fsanitize=thread")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "TSAN_OPTIONS=halt_on_error=0")
	_ = cmd.Run() // TSan exits 66 after a report
	report := stderr.String()
	if !strings.Contains(report, "lock-order-inversion") {
		t.Fatalf("no lock-order report from TSan:\n%s", report)
	}
	snap, _, _, err := stacks.Parse(strings.NewReader(report), "")
	if err != nil {
		t.Fatalf("parse TSan's report: %v\n%s", err, report)
	}
	ds := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	if len(ds) == 0 || ds[0].ID != "lock-order-cycle" {
		t.Fatalf("top verdict %v, want lock-order-cycle; report:\n%s", ds, report)
	}
	d := ds[0]
	if d.Confidence != heuristics.Low {
		t.Errorf("confidence %s, want low (a potential cycle, not a dump of the hang)", d.Confidence)
	}
	chain := strings.Join(d.Chain, "\n")
	for _, fn := range []string{"take_b_after_a", "take_a_after_b"} {
		if !strings.Contains(chain, fn) {
			t.Errorf("chain does not name %s:\n%s", fn, chain)
		}
	}
}
