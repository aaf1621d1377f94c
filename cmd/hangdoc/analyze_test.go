package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// runWith is run with standard input.
func runWith(stdin string, args ...string) (stdout, stderr string, code int, err error) {
	var out, errOut strings.Builder
	ios := &ioStreams{out: &out, errOut: &errOut}
	ios.in = strings.NewReader(stdin)
	root := newRootCmd(ios)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), ios.exitCode, err
}

func dump(name string) string { return filepath.Join("..", "..", "testdata", "dumps", name) }

func TestAnalyzeGDBDump(t *testing.T) {
	out, errOut, code, err := runWith("", "analyze", dump("gdb/mutex_o2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(out, "\n", 2)[0]
	if code != exitHang || !strings.Contains(first, "(low confidence)") && !strings.Contains(first, "(medium confidence)") {
		t.Errorf("exit %d, first line %q; want a hang named without high confidence (no owners in a gdb dump)", code, first)
	}
	if !strings.Contains(out, "pthread_mutex_lock") {
		t.Errorf("report lacks the stacks:\n%s", out)
	}
	t.Logf("first line: %s\nstderr: %s", first, errOut)
}

func TestAnalyzeStdinAndSkipped(t *testing.T) {
	b, err := os.ReadFile(dump("gdb/mutex_o2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	pasted := "Here is what gdb said when it hung:\n\n```\n" + string(b) + "```\nThanks!\n"
	out, errOut, _, err := runWith(pasted, "analyze", "-")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "pthread_mutex_lock") {
		t.Errorf("stdin not read:\n%s", out)
	}
	if !strings.Contains(errOut, "standard input (gdb): line 1 ") || !strings.Contains(errOut, "skipped") {
		t.Errorf("skipped prose not reported on stderr: %q", errOut)
	}
}

func TestAnalyzeBadInputs(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage.txt")
	os.WriteFile(garbage, []byte("just some prose\nwith no stack in it\n"), 0o644)
	cases := []struct {
		args  []string
		usage bool
		says  string
	}{
		{[]string{"analyze"}, true, "needs a file"},
		{[]string{"analyze", "/no/such/dump.txt"}, false, "/no/such/dump.txt: no such file"},
		{[]string{"analyze", garbage}, false, "not a dump hangdoc knows"},
		{[]string{"analyze", "--input-format", "nonesuch", garbage}, true, "unknown input format"},
	}
	for _, c := range cases {
		_, _, _, err := runWith("", c.args...)
		var ue usageError
		if err == nil || errors.As(err, &ue) != c.usage || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("hangdoc %s: %v; want one line saying %q (usage error: %v)", strings.Join(c.args, " "), err, c.says, c.usage)
		}
	}
}

// TestAnalyzeSnapshotLater: a hangdoc/v1 snapshot analysed later gives the
// same diagnosis as when it was taken.
func TestAnalyzeSnapshotLater(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "abba.c", patient.O2g...))
	live, _, err := run("attach", "--samples", "2", "--interval", "50ms", "--format", "json", strconv.Itoa(p.Pid))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "snap.json")
	if err := os.WriteFile(file, []byte(live), 0o644); err != nil {
		t.Fatal(err)
	}
	later, _, code, err := runWith("", "analyze", "--format", "json", file)
	if err != nil {
		t.Fatal(err)
	}
	if code != exitHang {
		t.Errorf("exit code %d, want %d", code, exitHang)
	}
	type doc struct {
		Diagnoses []struct {
			ID      string `json:"id"`
			Tids    []int  `json:"tids"`
			Summary string `json:"summary"`
		} `json:"diagnoses"`
	}
	var a, b doc
	if err := json.Unmarshal([]byte(live), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(later), &b); err != nil {
		t.Fatal(err)
	}
	if len(a.Diagnoses) == 0 || len(b.Diagnoses) == 0 || a.Diagnoses[0].ID != b.Diagnoses[0].ID ||
		a.Diagnoses[0].Summary != b.Diagnoses[0].Summary {
		t.Fatalf("live %+v\nlater %+v", a.Diagnoses, b.Diagnoses)
	}
}

// TestAnalyzeCore: a gcore of a deadlocked patient gives the live verdict,
// owners included.
func TestAnalyzeCore(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "abba.c", patient.O2g...))
	core := patient.Gcore(t, p.Pid, t.TempDir())
	out, _, code, err := runWith("", "analyze", core)
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(out, "\n", 2)[0]
	if code != exitHang || !strings.HasPrefix(first, "lock-order-cycle (high confidence)") || !strings.Contains(first, "lock_a") || !strings.Contains(first, "lock_b") {
		t.Fatalf("exit %d, first line %q", code, first)
	}
}

// TestAnalyzeCoreWrongExe: --exe naming another build than the one a C
// program's core ran is refused in one line, as for a Go core: its
// symbols would name the core's frames wrong (__do_global_dtors_aux).
func TestAnalyzeCoreWrongExe(t *testing.T) {
	patient.RequirePtrace(t)
	bin := patient.Build(t, "abba.c", patient.O2g...)
	p := patient.Start(t, bin)
	core := patient.Gcore(t, p.Pid, t.TempDir())
	other := patient.Build(t, "mutex_o2.c", patient.O2g...)
	out, _, code, err := runIn("analyze", core, "--exe", other)
	if err == nil || code != exitAnalysis {
		t.Fatalf("exit %d, %v: want the core refused\n%s", code, err, out)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, other+" is not the build the process ran") {
		t.Errorf("error %q: want one line saying --exe is another build", msg)
	}
	// The right build is taken.
	if out, _, code, err := runWith("", "analyze", core, "--exe", bin); err != nil || code != exitHang || !strings.HasPrefix(out, "lock-order-cycle") {
		t.Errorf("--exe of the build it ran: exit %d, %v\n%s", code, err, out)
	}
}
