package stacks

import (
	"strings"
	"testing"
	"time"
)

func TestIPSGoldens(t *testing.T) { checkDumpGoldens(t, "ips", ParseIPS, 0) }

// TestIPSExcerpts: cut .ips pastes give their threads (id, name) and
// frames (symbol, offset; the image by index when the list is cut),
// a token broken across lines read whole, a cut first thread kept with a
// note.
func TestIPSExcerpts(t *testing.T) {
	snap, skipped := parseStoredDump(t, "ips", "surge_5544_excerpt.txt", ParseIPS)
	checkSkipped(t, skipped)
	p := snap.Processes[0]
	if len(p.Threads) != 3 || p.Threads[0].Tid != 0 || p.Threads[1].Tid != 121547 || p.Threads[1].Name != "reaper/mediaafx" {
		t.Fatalf("threads %+v", p.Threads)
	}
	st := p.Threads[1].Stack
	if len(st) != 7 || st[0].Func != "__psynch_cvwait" || st[0].Offset != 20672 || st[0].Module != "image 8" || st[6].Func != "thread_start" {
		t.Errorf("stack %+v", st)
	}
	if len(p.Notes) != 2 {
		t.Errorf("notes %q: want the cut start and the missing image list", p.Notes)
	}
	snap, _ = parseStoredDump(t, "ips", "veracrypt_1849_excerpt.txt", ParseIPS)
	if th := snap.Processes[0].Threads; len(th) != 1 || th[0].Tid != 402967 || th[0].Stack[1].Func != "_pthread_mutex_firstfit_lock_wait" {
		t.Errorf("threads %+v", th)
	}
}

// A whole report (hand-written, in the shape macOS writes): the header
// line, pid, path, named threads, the image list naming modules.
func TestIPSWhole(t *testing.T) {
	in := `{"app_name":"x","bug_type":"309"}` + "\n" +
		`{"pid":4242,"procPath":"\/Applications\/X.app\/x","threads":[{"triggered":true,"id":11,"queue":"com.apple.main-thread","frames":[{"imageOffset":14812,"symbol":"__psynch_mutexwait","symbolLocation":8,"imageIndex":1},{"imageOffset":99,"imageIndex":0}]},{"id":12,"name":"w","frames":[{"imageOffset":5,"symbol":"f","symbolLocation":1,"imageIndex":0}]}],` +
		`"usedImages":[{"source":"P","arch":"arm64","base":4294967296,"size":1,"uuid":"u","path":"\/x","name":"x"},{"source":"P","arch":"arm64","base":6442450944,"name":"libsystem_kernel.dylib"}]}` + "\n"
	snap, skipped, err := ParseIPS(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	checkSkipped(t, skipped)
	p := snap.Processes[0]
	if p.Pid != 4242 || p.Exe != "/Applications/X.app/x" || len(p.Threads) != 2 || len(p.Notes) != 0 {
		t.Fatalf("process %+v", p)
	}
	if th := p.Threads[0]; th.Tid != 11 || th.Name != "com.apple.main-thread" || th.Stack[0].Module != "libsystem_kernel.dylib" || th.Stack[1].Module != "x" {
		t.Errorf("thread %+v", th)
	}
}

func TestIPSBadInput(t *testing.T) {
	for _, in := range []string{"", `{"a":1}`, "hello\n"} {
		if _, _, err := ParseIPS(strings.NewReader(in)); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line", in, err)
		}
	}
}

// TestIPSLinear: a long run of frames, one long line or many, reads in
// linear time.
func TestIPSLinear(t *testing.T) {
	frame := `{"imageOffset":20672,"symbol":"__psynch_cvwait","symbolLocation":8,"imageIndex":8},`
	checkDumpLinear(t, ParseIPS, map[string]string{
		"one line":   `{"id":1,"frames":[` + strings.Repeat(frame, 20000) + "]}\n",
		"many lines": strings.Repeat(`{"id":1,"frames":[`+frame+"]},\n", 20000),
		"no objects": strings.Repeat(`{"value":1},`, 100000),
	}, map[string]bool{"one line": true, "many lines": true, "no objects": false}, 5*time.Second)
}

func FuzzParseIPS(f *testing.F) {
	fuzzDumps(f, "ips", ParseIPS, nil, `{"id":1,"name":"a","frames":[{"imageOffset":1,"symbol":"x\"y","symbolLocation":1,"imageIndex":0}]}`)
}
