package heuristics_test

import (
	"os"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// TestJavaNativeIOIsIOWait: a jstack thread RUNNABLE in the JDK's native
// socket read (the vocabulary's "Java native I/O" row) waits on I/O, not
// a deadlock. Fires on two real pastes (testdata/corpus: meta.json has
// their URLs), both a read without a socket timeout; silent on a
// RUNNABLE thread that computes, and a monitor cycle (a real jstack of
// our patient) with such a reader added still reads as the cycle.
func TestJavaNativeIOIsIOWait(t *testing.T) {
	for _, dir := range []string{
		"jstack-mixpanel-java-12-http-response-read-no-socket-timeout",
		"jstack-java-apns-120-ssl-handshake-read-no-timeout",
	} {
		b, err := os.ReadFile("../testdata/corpus/" + dir + "/dump.txt")
		if err != nil {
			t.Fatal(err)
		}
		ds := diagnoseJstackText(t, string(b))
		if len(ds) == 0 || ds[0].ID != "io-wait" || ds[0].Deadlock {
			t.Errorf("%s: diagnoses %v: want io-wait first", dir, ids(ds))
		} else if !strings.Contains(ds[0].Summary, "socketRead0") {
			t.Errorf("%s: summary %q: want the native read named", dir, ds[0].Summary)
		}
	}
	// hand-built: a RUNNABLE thread in Java code, no native call on top
	compute := `"worker-1" #12 prio=5 os_prio=0 tid=0x00007f8b40c5f000 nid=0xef1 runnable [0x00007f8ae56e6000]
   java.lang.Thread.State: RUNNABLE
	at com.example.Matrix.multiply(Matrix.java:88)
	at com.example.Worker.run(Worker.java:21)
	at java.lang.Thread.run(Thread.java:748)
`
	if d := find(diagnoseJstackText(t, compute), "io-wait"); d != nil {
		t.Errorf("a computing thread: io-wait %q", d.Summary)
	}
	abba, err := os.ReadFile("../testdata/dumps/jstack/monitor_abba.txt")
	if err != nil {
		t.Fatal(err)
	}
	reader := `
"pool-6-thread-15" #90 prio=5 os_prio=0 tid=0x00007f8b40c5f000 nid=0xef1 runnable [0x00007f8ae56e6000]
   java.lang.Thread.State: RUNNABLE
	at java.net.SocketInputStream.socketRead0(Native Method)
	at java.net.SocketInputStream.read(SocketInputStream.java:150)
	at java.lang.Thread.run(Thread.java:748)
`
	text := strings.Replace(string(abba), "\n\"main\" #1", reader+"\n\"main\" #1", 1)
	if text == string(abba) {
		t.Fatal("monitor_abba.txt: no main thread to add the reader before")
	}
	if ds := diagnoseJstackText(t, text); len(ds) == 0 || ds[0].ID != "lock-order-cycle" {
		t.Errorf("a monitor cycle beside a socket reader: %v, want lock-order-cycle first", ids(ds))
	}
}

func diagnoseJstackText(t *testing.T, text string) []heuristics.Diagnosis {
	t.Helper()
	snap, _, _, err := stacks.Parse(strings.NewReader(text), "")
	if err != nil {
		t.Fatal(err)
	}
	return heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
}
