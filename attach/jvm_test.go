package attach_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// startJavaPatient compiles testdata/patients/Deadlock.java once (cached
// by content) and starts it in mode: "monitor", "reentrant" or "clinit".
// It returns once the patient's two threads are deadlocked.
func startJavaPatient(t *testing.T, mode string) *patient.Proc {
	t.Helper()
	for _, tool := range []string{"java", "javac", "jstack", "jcmd"} {
		if _, err := exec.LookPath(tool); err != nil {
			patient.Missing(t, "%s not installed (scripts/deps/java.txt)", tool)
		}
	}
	src := filepath.Join(patient.Dir(t), "Deadlock.java")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	dir := filepath.Join(patient.CacheDir(), "java-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "Deadlock.class")); err != nil {
		tmp, err := os.MkdirTemp(patient.CacheDir(), "java-build-")
		if err != nil {
			os.MkdirAll(patient.CacheDir(), 0o755)
			if tmp, err = os.MkdirTemp(patient.CacheDir(), "java-build-"); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command("javac", "-d", tmp, src).CombinedOutput(); err != nil {
			t.Fatalf("javac: %v\n%s", err, out)
		}
		if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
			os.RemoveAll(tmp)
		}
	}
	p := patient.Start(t, "java", "-Xshare:auto", "-cp", dir, "Deadlock", mode)
	p.Expect(t, "stuck", 30*time.Second)
	return p
}

// checkJavaCycle: the diagnoses name a lock-order cycle at high
// confidence between the patient's two threads.
func checkJavaCycle(t *testing.T, snap *stacks.Snapshot) {
	t.Helper()
	var tids []int
	for _, p := range snap.Processes {
		for _, th := range p.Threads {
			if th.Name == "transfer-ab" || th.Name == "transfer-ba" {
				tids = append(tids, th.Tid)
			}
		}
	}
	if len(tids) != 2 {
		t.Fatalf("threads transfer-ab and transfer-ba not both read: %v", tids)
	}
	ds := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	if len(ds) == 0 || ds[0].ID != "lock-order-cycle" || ds[0].Confidence != "high" {
		t.Fatalf("diagnoses %+v, want lock-order-cycle (high) first", ds)
	}
	for _, tid := range tids {
		if !slices.Contains(ds[0].Tids, tid) {
			t.Errorf("the cycle %v does not name thread %d", ds[0].Tids, tid)
		}
	}
}

// TestJstackLive: jstack on a live deadlocked JVM, read by the jstack
// reader, gives the cycle with its owners: monitors, ReentrantLocks and
// a class-initialisation cycle.
func TestJstackLive(t *testing.T) {
	for _, mode := range []string{"monitor", "reentrant", "clinit"} {
		t.Run(mode, func(t *testing.T) {
			p := startJavaPatient(t, mode)
			out, err := exec.Command("jstack", "-l", itoa(p.Pid)).Output()
			if err != nil {
				t.Fatalf("jstack: %v", err)
			}
			snap, _, format, err := stacks.Parse(bytes.NewReader(out), "")
			if err != nil || format != "jstack" {
				t.Fatalf("%s: %v", format, err)
			}
			checkJavaCycle(t, snap)
		})
	}
}

// TestAttachJVMOptIn: reading a JVM's Java threads through jcmd changes
// the JVM (it starts an "Attach Listener" thread and serves the socket
// /tmp/.java_pidPID, for the rest of its life), so it is opt-in. Without
// Options.JVM the attach leaves the JVM as it was (no new thread, no
// socket) and says how to get the Java threads; with it the Java threads
// are read, the native ones kept as OS threads, and the change is there.
// If a JDK ever answered jcmd without that change, this test fails: then
// reading through jcmd could be the default.
func TestAttachJVMOptIn(t *testing.T) {
	p := startJavaPatient(t, "monitor")
	sock := "/tmp/.java_pid" + itoa(p.Pid) // HotSpot on Linux: always /tmp
	listener := func() bool {
		comms, _ := filepath.Glob(filepath.Join("/proc", itoa(p.Pid), "task", "*", "comm"))
		for _, c := range comms {
			if b, _ := os.ReadFile(c); strings.TrimSpace(string(b)) == "Attach Listener" {
				return true
			}
		}
		return false
	}
	if listener() {
		t.Fatal("the JVM runs an Attach Listener before any attach")
	}
	snap, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 1})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(snap.Processes[0].Notes, "\n")
	if _, err := os.Stat(sock); err == nil || listener() {
		t.Errorf("an attach without --jvm changed the JVM (socket %s or Attach Listener thread)", sock)
	}
	if !strings.Contains(notes, "--jvm") || len(snap.Processes[0].OSThreads) != 0 {
		t.Errorf("without --jvm: notes %q, want the way to read the Java threads", notes)
	}

	snap, err = attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 1, JVM: true})
	if err != nil {
		t.Fatal(err)
	}
	pr := snap.Processes[0]
	if len(pr.OSThreads) == 0 || !strings.Contains(strings.Join(pr.Notes, "\n"), "Thread.print") {
		t.Errorf("os threads %d, notes %q", len(pr.OSThreads), pr.Notes)
	}
	checkJavaCycle(t, snap)
	if _, err := os.Stat(sock); err != nil || !listener() {
		t.Errorf("jcmd left no trace in the JVM (socket: %v, Attach Listener: %v): reading through it may not need --jvm", err, listener())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
