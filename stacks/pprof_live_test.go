package stacks_test

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// TestPprofLive: the profile a real Go program writes at debug=1 is
// detected and read whole.
func TestPprofLive(t *testing.T) {
	bin := patient.BuildGo(t, "pprof_abba")
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	snap, skipped, format, err := stacks.Parse(bytes.NewReader(out), "")
	if err != nil || format != "pprof-goroutine" || len(skipped) > 0 {
		t.Fatalf("%s: %v, skipped %v", format, err, skipped)
	}
	if n := len(snap.Processes[0].Threads); n != 11 {
		t.Errorf("%d goroutines, want 11", n)
	}
}
