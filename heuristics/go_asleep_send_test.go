package heuristics

// Every goroutine blocked on a channel, none runs, none on a timer or the
// network, and no runtime message (a SIGQUIT dump): the send is the wait
// to name. The dumps are written by hand in the runtime's format, with
// other names than the corpus report the rule was found on (go#20170).

import "testing"

const asleepSendDump = "goroutine 1 [chan send, 4 minutes]:\n" +
	"main.walk(0xc000010000, 0xc000012000)\n\t/src/app/walk.go:40 +0x1a3\n" +
	"main.main()\n\t/src/app/main.go:12 +0x55\n\n" +
	"goroutine 7 [chan receive, 4 minutes]:\n" +
	"main.collect(0xc000014000)\n\t/src/app/collect.go:20 +0x61\n" +
	"created by main.main in goroutine 1\n\t/src/app/main.go:10 +0x3d\n"

func TestAsleepSendIsChannelNoPartner(t *testing.T) {
	d, ok := top(parseDump(t, asleepSendDump))
	if !ok || d.ID != "channel-no-partner" || d.Confidence != Medium {
		t.Fatalf("every goroutine asleep on channels, one send: top %s (%s) %s, want channel-no-partner (medium)", d.ID, d.Confidence, d.Summary)
	}
	has(t, "summary", d.Summary, "goroutine 1", "main.walk")
}

// A goroutine on a timer may yet receive: no send is named for it.
// Receives alone (workers waiting for jobs) name no send either.
func TestAsleepSendSilent(t *testing.T) {
	timer := asleepSendDump + "\ngoroutine 9 [sleep]:\n" +
		"time.Sleep(0x3b9aca00)\n\t/usr/local/go/src/runtime/time.go:195 +0x135\n" +
		"main.tick()\n\t/src/app/tick.go:8 +0x25\n" +
		"created by main.main in goroutine 1\n\t/src/app/main.go:11 +0x45\n"
	if d, ok := top(parseDump(t, timer)); ok && d.ID == "channel-no-partner" {
		t.Errorf("a goroutine sleeps on a timer: %s (%s) %s", d.ID, d.Confidence, d.Summary)
	}
	idle := "goroutine 1 [chan receive, 4 minutes]:\n" +
		"main.main()\n\t/src/app/main.go:12 +0x55\n\n" +
		"goroutine 7 [chan receive, 4 minutes]:\n" +
		"main.worker(0xc000014000)\n\t/src/app/worker.go:20 +0x61\n" +
		"created by main.main in goroutine 1\n\t/src/app/main.go:10 +0x3d\n"
	if ds := asleepSends(goProcs(newAnalysis(parseDump(t, idle)))[0]); len(ds) > 0 {
		t.Errorf("receives only: %d sends named", len(ds))
	}
}
