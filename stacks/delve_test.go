package stacks

import (
	"strings"
	"testing"
)

func TestDelveGoldens(t *testing.T) { checkDumpGoldens(t, "delve", ParseDelve, 0) }

// goroutineByStatus returns the goroutines of p with a status.
func goroutineByStatus(p *Process, status string) []*Thread {
	var out []*Thread
	for _, th := range p.Threads {
		if th.Goroutine() != nil && th.Goroutine().Status == status {
			out = append(out, th)
		}
	}
	return out
}

// TestDelveGoroutinesT: `goroutines -t` gives every goroutine with its
// wait reason (the runtime clock after it dropped) and its stack; an
// inlined call (the PC of the frame it was inlined into) is Inlined.
func TestDelveGoroutinesT(t *testing.T) {
	snap, skipped := parseStoredDump(t, "delve", "abba_goroutines_t.txt", ParseDelve)
	checkSkipped(t, skipped)
	if len(snap.Processes) != 1 || len(snap.Processes[0].Threads) != 10 {
		t.Fatalf("want 1 process of 10 goroutines ([10 goroutines]), got %d processes", len(snap.Processes))
	}
	p := snap.Processes[0]
	locks := goroutineByStatus(p, "sync.Mutex.Lock")
	if len(locks) != 2 {
		t.Fatalf("%d goroutines in sync.Mutex.Lock, want 2", len(locks))
	}
	st := locks[0].Stack
	var names []string
	for _, f := range st {
		names = append(names, f.Func)
	}
	if st[0].Func != "runtime.gopark" || st[0].File != "/usr/local/go/src/runtime/proc.go" || st[0].Line != 463 || st[0].PC == 0 {
		t.Errorf("frame 0 %+v", st[0])
	}
	i := strings.Index(strings.Join(names, " "), "sync.(*Mutex).Lock")
	if i < 0 {
		t.Fatalf("no sync.(*Mutex).Lock in %q", names)
	}
	for _, f := range st {
		if f.Func == "sync.(*Mutex).Lock" && !f.Inlined {
			t.Errorf("sync.(*Mutex).Lock shares transfer's PC: inlined, got %+v", f)
		}
	}
	if len(p.Notes) != 0 {
		t.Errorf("notes %q: a whole -t listing misses nothing", p.Notes)
	}
}

// TestDelveStackFull: `stack -full` of both goroutines of the ABBA gives
// the mutexes' addresses (lockSlow's m) as the runtime's dump does, and
// the goroutines switched to by `goroutine N`.
func TestDelveStackFull(t *testing.T) {
	snap, skipped := parseStoredDump(t, "delve", "abba_stack_full.txt", ParseDelve)
	checkSkipped(t, skipped)
	p := snap.Processes[0]
	if len(p.Threads) != 2 || !snap.Evidence.Arguments {
		t.Fatalf("%d goroutines (arguments %v), want the two switched to, with arguments", len(p.Threads), snap.Evidence.Arguments)
	}
	objs := map[uint64]bool{}
	for _, th := range p.Threads {
		if th.Goroutine() == nil || th.Goroutine().ID == 0 || th.Goroutine().Status != "sync.Mutex.Lock" {
			t.Errorf("thread %+v: want a goroutine named by `Switched from … to N` in sync.Mutex.Lock", th)
			continue
		}
		if th.Goroutine().Object == 0 {
			t.Errorf("goroutine %d: no mutex address", th.Tid)
		}
		objs[th.Goroutine().Object] = true
		for _, f := range th.Stack {
			for _, a := range f.Args {
				if strings.HasPrefix(a.Value, "(unreadable") {
					t.Errorf("kept an unreadable value %+v", a)
				}
			}
		}
	}
	if len(objs) != 2 {
		t.Errorf("mutexes %v: want two different ones", objs)
	}
}

// TestDelveList: `goroutines` without -t gives each goroutine at its
// user location, and says that -t prints the stacks.
func TestDelveList(t *testing.T) {
	snap, _ := parseStoredDump(t, "delve", "abba_goroutines.txt", ParseDelve)
	p := snap.Processes[0]
	if len(p.Threads) != 10 {
		t.Fatalf("%d goroutines, want 10", len(p.Threads))
	}
	for _, th := range p.Threads {
		if len(th.Stack) != 1 || th.Stack[0].File == "" {
			t.Errorf("goroutine %d: stack %+v, want its one location", th.Tid, th.Stack)
		}
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "`goroutines -t`") {
		t.Errorf("notes %q", p.Notes)
	}
}

// TestDelveRepeats: a listing pasted twice is two processes; a second
// dlv session is another process; a list then its -t stacks is one.
func TestDelveRepeats(t *testing.T) {
	one := string(readStoredDump(t, "delve", "abba_goroutines_t.txt"))
	list := string(readStoredDump(t, "delve", "abba_goroutines.txt"))
	for in, want := range map[string]int{one + one: 2, list + one: 2} {
		snap, _, err := ParseDelve(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Processes) != want {
			t.Errorf("%d processes, want %d in\n%s", len(snap.Processes), want, in)
		}
	}
	// in one session, a list then -t of the same goroutines is one process
	in := "  Goroutine 7 - User: /a/main.go:9 main.f (0x4000) [chan receive]\n[1 goroutines]\n" +
		"  Goroutine 7 - User: /a/main.go:9 main.f (0x4000) [chan receive]\n\t0  0x0000000000401000 in runtime.gopark\n\t    at /go/src/runtime/proc.go:463\n" +
		"\t1  0x0000000000404000 in main.f\n\t    at /a/main.go:9\n[1 goroutines]\n"
	snap, skipped, err := ParseDelve(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	checkSkipped(t, skipped)
	if len(snap.Processes) != 1 || len(snap.Processes[0].Threads) != 1 || len(snap.Processes[0].Threads[0].Stack) != 2 || len(snap.Processes[0].Notes) != 0 {
		t.Errorf("list then -t in one session: %+v", snap.Processes)
	}
}

// TestDelveBadInput: what is not delve output gets one line that says
// what was looked for.
func TestDelveBadInput(t *testing.T) {
	for _, in := range []string{"", "hello\nworld\n", "#0  0x00007f in main () at a.c:3\n"} {
		_, _, err := ParseDelve(strings.NewReader(in))
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line", in, err)
		}
	}
}

func FuzzParseDelve(f *testing.F) {
	fuzzDumps(f, "delve", ParseDelve, nil,
		"  Goroutine 1 - User: /a.go:1 main.main (0x1) [chan send 5]\n\t0  0x0000000000000001 in main.main\n\t    at /a.go:1\n\t        x = (*int)(0x1)\n[1 goroutines]\n",
		"(dlv) Switched from 0 to 2 (thread 9)\n(dlv) 0  0x0000000000000001 in f\n   at /a.go:1\nerror: bad\n(truncated)\n")
}
