package stacks

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseLLDBGolden(t *testing.T) {
	checkDumpGoldens(t, "lldb", ParseLLDB, 0)
}

func parseLLDBFile(t *testing.T, name string) (*Snapshot, []Skipped) {
	t.Helper()
	return parseStoredDump(t, "lldb", name, ParseLLDB)
}

// `lldb -p PID --batch -o 'thread list' -o 'bt all'` on mutex_o2 (-O2,
// no frame pointers, no debug information of its own).
func TestParseLLDBMutexO2(t *testing.T) {
	snap, skipped := parseLLDBFile(t, "mutex_o2.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v, want nothing: every line of lldb --batch output is understood", skipped)
	}
	if snap.Source != "lldb" || snap.Schema != Schema || len(snap.Processes) != 1 || !snap.Evidence.Arguments {
		t.Fatalf("snapshot %+v", snap)
	}
	p := snap.Processes[0]
	if p.Pid != 31076 || p.Exe != "/tmp/dumpgen/mutex_o2" {
		t.Errorf("pid %d exe %q", p.Pid, p.Exe)
	}
	// Debian's lldb 14 cannot load its Python module: a note, not a skip
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "lldb.embedded_interpreter") {
		t.Errorf("notes %q", p.Notes)
	}
	var names []string
	var tids []int
	for _, th := range p.Threads {
		names = append(names, th.Name)
		tids = append(tids, th.Tid)
		if len(th.Notes) != 0 {
			t.Errorf("thread %d notes %q", th.Tid, th.Notes)
		}
	}
	// the attach stop report and `thread list` listed every thread before
	// `bt all`: still five threads, whole, with the tids `thread list` gave
	if want := []string{"mutex_o2", "ant", "bee", "cat", "dog"}; !reflect.DeepEqual(names, want) {
		t.Errorf("threads %q, want %q", names, want)
	}
	if want := []int{31076, 31078, 31079, 31080, 31081}; !reflect.DeepEqual(tids, want) {
		t.Errorf("tids %v, want %v", tids, want)
	}
	dog := threadByName(t, p, "dog")
	checkFuncs(t, "dog stack", dog.Stack, "__GI___lll_lock_wait", "__GI___lll_lock_wait", "___pthread_mutex_lock", "___pthread_mutex_lock",
		"take_lock", "dog_fetch", "dog_dig", "dog_sniff", "dog_wander", "dog_worker", "start_thread", "__clone3")
	// lldb 14 prints glibc's inlined futex_wait and lll_mutex_lock_optimized
	// under the name of the function they are inlined into
	checkInlined(t, "dog", dog.Stack, true, false, true, false, false, false, false, false, false, false, false, false)
	f1, f3, f4 := dog.Stack[1], dog.Stack[3], dog.Stack[4]
	if f1.File != "lowlevellock.c" || f1.Line != 49 || f1.Module != "libc.so.6" || f1.PC != 0x00007f28eac8d115 ||
		!reflect.DeepEqual(f1.Args, []Arg{NewArg("futex", "0x000055926a28f100"), NewArg("private", "0")}) {
		t.Errorf("#1 = %+v", f1)
	}
	if !reflect.DeepEqual(f3.Args, []Arg{NewArg("mutex", "0x000055926a28f100")}) {
		t.Errorf("#3 args %+v: the mutex address is the evidence a dump carries", f3.Args)
	}
	if f4.Module != "mutex_o2" || f4.File != "" || f4.Line != 0 || f4.PC != 0x000055926a28c7c7 || f4.Args != nil {
		t.Errorf("#4 = %+v", f4)
	}
	main := threadByTid(t, p, p.Pid)
	if got := funcs(main.Stack); len(got) != 7 || got[3] != "main" || got[6] != "_start" {
		t.Errorf("main: %q", got)
	}
	// args holding a backtick and " at ": "main=(mutex_o2`main)"
	if a := main.Stack[4].Args; len(a) != 3 || a[0] != NewArg("main", "(mutex_o2`main)") || main.Stack[4].File != "libc_start_call_main.h" {
		t.Errorf("main #4 = %+v", main.Stack[4])
	}
}

// `thread backtrace all` alone: lldb's bt prints no tids.
func TestParseLLDBBacktraceAll(t *testing.T) {
	snap, skipped := parseLLDBFile(t, "abba_tba.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	if p.Pid != 32098 || len(p.Threads) != 3 {
		t.Fatalf("pid %d, %d threads", p.Pid, len(p.Threads))
	}
	for _, th := range p.Threads {
		if th.Tid != 0 {
			t.Errorf("thread %q: tid %d, but the dump shows none", th.Name, th.Tid)
		}
	}
	ab := threadByName(t, p, "transfer-ab")
	if got := funcs(ab.Stack); len(got) != 8 || got[4] != "take_b_after_a" || got[5] != "transfer_ab" {
		t.Errorf("transfer-ab %q", got)
	}
	if f := ab.Stack[4]; f.File != "abba.c" || f.Line != 32 || !reflect.DeepEqual(f.Args, []Arg{NewArg("x", "1")}) {
		t.Errorf("transfer-ab #4 %+v", f)
	}
	// "[artificial]" (a tail-call frame lldb made up) is a flag, not a name
	main := threadByName(t, p, "abba")
	if f := main.Stack[3]; f.Func != "___pthread_join" || f.File != "pthread_join.c" || f.Line != 24 {
		t.Errorf("abba #3 %+v", f)
	}
	// the same stacks as with `thread list` before `bt all`
	full, _ := parseLLDBFile(t, "abba.txt")
	for i, th := range full.Processes[0].Threads {
		if a, b := funcs(th.Stack), funcs(p.Threads[i].Stack); !reflect.DeepEqual(a, b) {
			t.Errorf("thread %d: bt all %q\nthread backtrace all %q", i, a, b)
		}
	}
}

func TestParseLLDBCxx(t *testing.T) {
	snap, skipped := parseLLDBFile(t, "cxx_mutex.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	nested := threadByName(t, p, "nested")
	want := map[int]string{
		3:  "___pthread_mutex_lock",
		4:  "__gthread_mutex_lock",
		6:  "std::lock_guard<std::mutex>::lock_guard",
		7:  "hangdoc_patient::Guarded<int>::update(int)",
		8:  "hangdoc_patient::Relay<int, 0>::forward",
		11: "hangdoc_patient::Relay<int, 3>::forward",
		13: "__invoke_impl<void, main()::<lambda()> >",
		15: "_M_invoke<0>",
		17: "std::thread::_State_impl<std::thread::_Invoker<std::tuple<main()::<lambda()> > > >::_M_run",
		18: "",
		20: "__clone3",
	}
	for i, w := range want {
		if got := nested.Stack[i].Func; got != w {
			t.Errorf("nested #%d = %q, want %q", i, got, w)
		}
	}
	// lldb printed "update(int) [inlined] lock_guard" and then no frame for
	// update itself: the parser puts it back, at the inlined frame's PC
	if f := nested.Stack[7]; f.Inlined || f.PC != nested.Stack[6].PC || f.Module != "cxx_mutex" || f.File != "" {
		t.Errorf("nested #7 (put back) = %+v", f)
	}
	if len(nested.Notes) != 1 || !strings.Contains(nested.Notes[0], "lldb printed no frame for hangdoc_patient::Guarded<int>::update(int)") {
		t.Errorf("nested notes %q", nested.Notes)
	}
	checkInlined(t, "nested", nested.Stack, true, false, true, false, true, true, true, false, false)
	// _M_run's machine frame: five inlined frames (two "[inlined]", three
	// printed as _M_run without arguments) over _M_run(this=…)
	for i := 12; i <= 17; i++ {
		if nested.Stack[i].Inlined != (i < 17) {
			t.Errorf("nested #%d %q: Inlined %v", i, nested.Stack[i].Func, nested.Stack[i].Inlined)
		}
	}
	if f := nested.Stack[6]; !reflect.DeepEqual(f.Args, []Arg{NewArg("__m", "0x00007fff571b0420"), NewArg("this", "<unavailable>")}) ||
		f.File != "std_mutex.h" || f.Line != 229 {
		t.Errorf("nested #6 = %+v", f)
	}
	main := threadByTid(t, p, p.Pid)
	if f := main.Stack[3]; f.Func != "std::thread::join()" || f.Module != "libstdc++.so.6" {
		t.Errorf("main #3 = %+v, want the symbol as lldb printed it", f)
	}
	waiter := threadByName(t, p, "waiter")
	w4 := waiter.Stack[4]
	if !w4.Inlined || !strings.HasPrefix(w4.Func, "void std::condition_variable::wait<hangdoc_patient::Mailbox<") ||
		!strings.HasSuffix(w4.Func, "::take(int)::'lambda'()>") || len(w4.Args) != 3 || w4.Args[0].Value != "(unnamed struct) @ 0x000000001b1c7380" {
		t.Errorf("waiter #4 = %+v", w4)
	}
}

func TestParseLLDBSignal(t *testing.T) {
	snap, skipped := parseLLDBFile(t, "sighandler.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	victim := threadByName(t, snap.Processes[0], "victim")
	checkFuncs(t, "victim", victim.Stack, "__GI___libc_read", "__GI___libc_read", "handler_blocks", "on_usr1",
		"<signal handler called>", "__libc_pause", "interrupted_work", "victim_main", "start_thread", "__clone3")
	if f := victim.Stack[4]; !f.Signal || f.Func != "__restore_rt" || f.Module != "libc.so.6" || f.Inlined {
		t.Errorf("signal frame %+v", f)
	}
	if !victim.Stack[0].Inlined || victim.Stack[1].Inlined || victim.Tid != 31636 {
		t.Errorf("victim tid %d #0 %+v #1 %+v", victim.Tid, victim.Stack[0], victim.Stack[1])
	}
}

func TestParseLLDBThreads10(t *testing.T) {
	snap, skipped := parseLLDBFile(t, "threads10.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	if len(p.Threads) != 12 {
		t.Fatalf("%d threads, want 12 (main, 10 blockers, heartbeat)", len(p.Threads))
	}
	counts := map[string]int{}
	for _, th := range p.Threads {
		if th.Tid == 0 {
			t.Errorf("thread %q without a tid", th.Name)
		}
		for _, f := range th.Stack {
			switch f.Func {
			case "block_on_cond", "block_in_sleep", "block_on_pipe", "heartbeat":
				counts[f.Func]++
			}
		}
	}
	if want := map[string]int{"block_on_cond": 4, "block_in_sleep": 3, "block_on_pipe": 3, "heartbeat": 1}; !reflect.DeepEqual(counts, want) {
		t.Errorf("blocked functions %v, want %v", counts, want)
	}
	if hb := threadByName(t, p, "heartbeat"); hb.Stack[0].Func != "__GI___clock_nanosleep" || len(hb.Stack[0].Args) != 4 {
		t.Errorf("heartbeat #0 %+v", hb.Stack[0])
	}
}

// abba's dump pasted into an issue: prose, a Markdown fence, a reply
// quoted with "> " and cut mid-line.
func TestParseLLDBPasted(t *testing.T) {
	snap, skipped := parseLLDBFile(t, "pasted_issue.md")
	checkSkipped(t, skipped, "lines 1–4 skipped: not a stack", "line 33 skipped: not a stack")
	p := snap.Processes[0]
	if p.Pid != 32098 || len(p.Threads) != 3 {
		t.Fatalf("pid %d, %d threads", p.Pid, len(p.Threads))
	}
	ba := threadByName(t, p, "transfer-ba")
	if ba.Tid != 32101 {
		t.Errorf("transfer-ba tid %d: `thread list` in the fence gives it", ba.Tid)
	}
	if got := funcs(ba.Stack); len(got) != 5 || got[4] != "take_a_after_b" || ba.Stack[4].Args != nil {
		t.Errorf("transfer-ba %q args %v", got, ba.Stack[4].Args)
	}
	if len(ba.Notes) != 1 || !strings.Contains(ba.Notes[0], "line 40: frame #4 cut mid-way") {
		t.Errorf("transfer-ba notes %q", ba.Notes)
	}
	if got := funcs(threadByName(t, p, "transfer-ab").Stack); len(got) != 8 {
		t.Errorf("transfer-ab %q", got)
	}
}

func TestParseLLDBFrames(t *testing.T) {
	checkFrameLines(t, ParseLLDB, []frameCase{
		{"frame #0: 0x0000000000401136 a.out`main + 22", Frame{Func: "main", Module: "a.out", PC: 0x401136}, false},
		{"frame #0: 0x0000000000401136 a.out`main at main.c:5:3 [opt]",
			Frame{Func: "main", Module: "a.out", PC: 0x401136, File: "main.c", Line: 5}, false},
		{"frame #0: 0x0000000000401136 a.out`f(s=\"a, b) at x.c:1\", c='(') at my file.c:7",
			Frame{Func: "f", Module: "a.out", PC: 0x401136, File: "my file.c", Line: 7,
				Args: []Arg{NewArg("s", `"a, b) at x.c:1"`), NewArg("c", "'('")}}, false},
		{"frame #0: 0x0000000000401136 a.out`main::$_0::operator()(this=0x00007ffd) const at m.cc:9:5",
			Frame{Func: "main::$_0::operator()", Module: "a.out", PC: 0x401136, File: "m.cc", Line: 9,
				Args: []Arg{NewArg("this", "0x00007ffd")}}, false},
		{"frame #0: 0x0000000000401136 a.out`main::$_0::operator(this=0x00007ffd)() const at m.cc:9:5",
			Frame{Func: "main::$_0::operator()", Module: "a.out", PC: 0x401136, File: "m.cc", Line: 9,
				Args: []Arg{NewArg("this", "0x00007ffd")}}, false},
		{"frame #0: 0x0000000000401136 a.out`(anonymous namespace)::helper(x=3) at a.cc:4:1",
			Frame{Func: "(anonymous namespace)::helper", Module: "a.out", PC: 0x401136, File: "a.cc", Line: 4,
				Args: []Arg{NewArg("x", "3")}}, false},
		{"frame #0: 0x0000000000401136 a.out`ns::Foo<int>::bar(int) const + 4",
			Frame{Func: "ns::Foo<int>::bar(int) const", Module: "a.out", PC: 0x401136}, false},
		{"frame #0: 0x0000000000401136 a.out`f(int) [inlined] g(y=2) at g.h:3:1",
			Frame{Func: "g", Module: "a.out", PC: 0x401136, File: "g.h", Line: 3, Inlined: true,
				Args: []Arg{NewArg("y", "2")}}, false},
		{"frame #0: 0x00007fff2043a0e6 libsystem_kernel.dylib`__psynch_mutexwait + 10",
			Frame{Func: "__psynch_mutexwait", Module: "libsystem_kernel.dylib", PC: 0x7fff2043a0e6}, false},
		{"frame #0: 0x00007fff204c6d7d libsystem_platform.dylib`_sigtramp + 29",
			Frame{Func: "_sigtramp", Module: "libsystem_platform.dylib", PC: 0x7fff204c6d7d, Signal: true}, false},
		{"frame #0: 0x00007f0000001000 libfoo.so`___lldb_unnamed_symbol42$$libfoo.so + 12",
			Frame{Module: "libfoo.so", PC: 0x7f0000001000}, false},
		{"frame #0: 0x0000000000000000", Frame{}, false},
		{"frame #0: 0x00007f0000001000 libfoo.so", Frame{Module: "libfoo.so", PC: 0x7f0000001000}, false},
		{"frame #0: 0x00007f00000", Frame{}, true},
		{"frame #0: 0x00007f0000001000 a.out`f(x=1, y=", Frame{Func: "f", Module: "a.out", PC: 0x7f0000001000}, true},
		{"frame #0: 0x00007f0000001000 a.out`f(x=1) at x.c:", Frame{Func: "f", Module: "a.out", PC: 0x7f0000001000, File: "x.c",
			Args: []Arg{NewArg("x", "1")}}, true},
	})
}

// Headers and numbering: a thread listed again replaces its earlier
// listing, a frame echoed by `frame select` is not a thread, a macOS
// `thread list` gives hex tids, and lldb's chatter is understood.
func TestParseLLDBSession(t *testing.T) {
	in := strings.ReplaceAll(`$ lldb -p 4242 --batch -o 'bt all'
(lldb) process attach --pid 4242
Process 4242 stopped
* thread #1, name = 'a, b', stop reason = signal SIGSTOP
    frame #0: 0x0000000000401000 x§spin + 4
(lldb) thread list
Process 4242 stopped
* thread #1: tid = 0x1092, 0x0000000000401000 x§spin + 4, name = 'a, b', queue = 'q', stop reason = signal SIGSTOP
  thread #2: tid = 4243, 0x0000000000401200 x§wait(fd=3) at w.c:12:2, stop reason = signal SIGSTOP
(lldb) bt all
* thread #1, name = 'a, b', stop reason = signal SIGSTOP
  * frame #0: 0x0000000000401000 x§spin + 4
    frame #1: 0x0000000000401100 x§main + 8
    frame #3: 0x0000000000401300 x§_start + 1
  thread #2, stop reason = signal SIGSTOP
    frame #0: 0x0000000000401200 x§wait(fd=3) at w.c:12:2
   11  	  for (;;)
-> 12  	    read(fd, &c, 1);
   13  	}
    frame #1: 0x0000000000401400 x§loop at w.c:20:1
(lldb) frame select 1
frame #1: 0x0000000000401400 x§loop at w.c:20:1
warning: could not load symbols for libfoo.so
Process 4242 detached
`, "§", "`")
	snap, skipped, err := ParseLLDB(strings.NewReader(in))
	if err != nil || len(skipped) != 0 {
		t.Fatalf("err %v skipped %v", err, skipped)
	}
	p := snap.Processes[0]
	if p.Pid != 4242 || len(p.Threads) != 2 {
		t.Fatalf("pid %d, %d threads: %+v", p.Pid, len(p.Threads), p.Threads)
	}
	t1, t2 := p.Threads[0], p.Threads[1]
	if t1.Tid != 0x1092 || t1.Name != "a, b" || !reflect.DeepEqual(funcs(t1.Stack), []string{"spin", "main", "_start"}) {
		t.Errorf("thread 1: %+v %q", t1, funcs(t1.Stack))
	}
	if len(t1.Notes) != 1 || t1.Notes[0] != "frame #2 not in the dump" {
		t.Errorf("thread 1 notes %q", t1.Notes)
	}
	if t2.Tid != 4243 || t2.Name != "" || !reflect.DeepEqual(funcs(t2.Stack), []string{"wait", "loop"}) {
		t.Errorf("thread 2: %+v %q", t2, funcs(t2.Stack))
	}
	if len(p.Notes) != 1 || p.Notes[0] != "lldb: warning: could not load symbols for libfoo.so" {
		t.Errorf("notes %q", p.Notes)
	}
}

// Two processes in one paste, and frames with no header at all.
func TestParseLLDBProcesses(t *testing.T) {
	in := "Process 10 stopped\n* thread #1, name = 'a'\n  frame #0: 0x0000000000401000 a`f + 1\n" +
		"Process 20 stopped\n* thread #1, name = 'b'\n  frame #0: 0x0000000000401000 b`g + 1\n"
	snap, _, err := ParseLLDB(strings.NewReader(in))
	if err != nil || len(snap.Processes) != 2 || snap.Processes[0].Pid != 10 || snap.Processes[1].Pid != 20 ||
		snap.Processes[1].Threads[0].Stack[0].Func != "g" {
		t.Fatalf("err %v snap %+v", err, snap)
	}
	snap, _, err = ParseLLDB(strings.NewReader("frame #0: 0x0000000000401000 a`f + 1\nframe #1: 0x0000000000401000 a`main + 1\n"))
	if err != nil || len(snap.Processes[0].Threads) != 1 || len(snap.Processes[0].Threads[0].Stack) != 2 {
		t.Fatalf("headerless: err %v snap %+v", err, snap)
	}
}

func TestParseLLDBErrors(t *testing.T) {
	checkParseErrors(t, ParseLLDB, []errorCase{
		{"", "empty input: no lldb backtrace"},
		{"\n\n  \n", "empty input: no lldb backtrace"},
		{"hello\nworld\n", `line 1: not an lldb backtrace: no frame ("frame #0: 0x…") or thread header ("thread #1, …")`},
		{"(lldb) bt all\n\nsome text\n", `line 3: not an lldb backtrace: no frame ("frame #0: 0x…") or thread header ("thread #1, …")`},
	})
	snap, _, err := ParseLLDB(&brokenReader{data: []byte("* thread #1, name = 'x'\n  frame #0: 0x0000000000000001 a`f + 1\n")})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || snap == nil || len(snap.Processes[0].Threads) != 1 {
		t.Fatalf("read error: snap %+v err %v", snap, err)
	}
}

func FuzzParseLLDB(f *testing.F) {
	fuzzDumps(f, "lldb", ParseLLDB, checkToolSnapshot,
		"frame #0: 0x1 a`f(x='(', y=\")\") at x:1:2\n",
		"thread #1: tid = 0x10, 0x1 a`b, name = '\nthread #1, name = 'z'\nframe #3: 0x2\nframe #0: 0x1 a`x [inlined] y\nframe #1: 0x1 a`q\n")
}

// checkToolSnapshot holds, beyond checkDumpResult, what the lldb and
// eu-stack readers promise: every process has threads, and no frame more
// than maxArgs arguments.
func checkToolSnapshot(t *testing.T, snap *Snapshot) {
	for _, p := range snap.Processes {
		if len(p.Threads) == 0 {
			t.Fatalf("process %d without threads", p.Pid)
		}
		for _, th := range p.Threads {
			for _, f := range th.Stack {
				if len(f.Args) > maxArgs {
					t.Fatalf("%d args", len(f.Args))
				}
			}
		}
	}
}

// toolLinearCases are inputs that would take quadratic time (or memory)
// in a careless parser; each is a few MB.
func toolLinearCases(frame string) map[string]string {
	return map[string]string{
		"prose":       strings.Repeat("zz\n\n", 500000),
		"long lines":  strings.Repeat(strings.Repeat("a (b ", 50000)+"\n", 20),
		"open parens": strings.Repeat(frame+strings.Repeat("(", 100000)+"\n", 20),
		"angles":      strings.Repeat(frame+strings.Repeat("<", 100000)+"(x=1)\n", 20),
		"at":          strings.Repeat(frame+"f"+strings.Repeat(" at x", 50000)+"\n", 20),
		"dashes":      strings.Repeat(frame+"f"+strings.Repeat(" - x", 50000)+"\n", 20),
		"args":        strings.Repeat(frame+"f("+strings.Repeat("a=(b, c=\"d\", ", 30000)+")\n", 20),
		"quotes":      strings.Repeat(frame+"f(c='('"+strings.Repeat(", s=\"\\\"\"", 30000)+")\n", 20),
		"inlined":     strings.Repeat(frame+"f"+strings.Repeat(" [inlined] g", 50000)+"\n", 20),
	}
}

func TestParseLLDBLinearTime(t *testing.T) {
	cases := toolLinearCases("frame #0: 0x0000000000401000 a`")
	cases["headers"] = strings.Repeat("thread #1, name = 'x'\n", 200000)
	cases["listed headers"] = strings.Repeat("thread #7: tid = 1, 0x0000000000401000 a`f + 1, name = 'x'\n", 100000)
	cases["frame numbers"] = strings.Repeat("frame #3: 0x0000000000401000 a`f + 1\n", 200000)
	cases["processes"] = func() string {
		var b strings.Builder
		for i := 1; i <= 100000; i++ {
			b.WriteString("Process " + strconv.Itoa(i) + " stopped\n* thread #1, name = 'x'\n  frame #0: 0x0000000000401000 a`f + 1\n")
		}
		return b.String()
	}()
	cases["anonymous"] = strings.Repeat("frame #0: 0x0000000000401000 a`f"+strings.Repeat("(anonymous namespace)", 10000)+"\n", 20)
	cases["frames"] = "thread #1, name = 'x'\n" + strings.Repeat("frame #1: 0x0000000000401000 a`f(x=1) at x.c:1:1\n", 200000)
	checkDumpLinear(t, ParseLLDB, cases, allSnapshotsBut(cases, "prose", "long lines"), toolLinearBound)
}

// BenchmarkParseLLDB reports parse speed (MB/s) over every stored dump.
func BenchmarkParseLLDB(b *testing.B) {
	benchmarkDumps(b, "lldb", ParseLLDB)
}

// TestLLDBSessionIsOneProcess: an lldb session shows each thread several
// times (the attach's stop report, `thread list`, the backtraces): read
// through Parse (detection and splitting, as analyze does) it is one
// process; the same session pasted twice is two.
func TestLLDBSessionIsOneProcess(t *testing.T) {
	for _, f := range storedDumps(t, "lldb") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		snap, _, _, err := Parse(bytes.NewReader(b), "")
		if err != nil || len(snap.Processes) != 1 {
			t.Errorf("%s: %v, want one process", filepath.Base(f), err)
			continue
		}
		if !strings.HasSuffix(f, ".md") && !strings.Contains(f, "thread_list") {
			twice := append(append(append([]byte{}, b...), '\n'), b...)
			if snap, _, _, err := Parse(bytes.NewReader(twice), ""); err != nil || len(snap.Processes) != 2 {
				t.Errorf("%s twice: want two processes", filepath.Base(f))
			}
		}
	}
}

// TestLLDBVariants: `thread backtrace all -c 3` keeps three frames a
// thread; a core read with `target create --core` names its executable
// and lldb's broken Python tracebacks are notes, not skipped lines; a
// stripped executable's frames (lldb's ___lldb_unnamed_symbolN + off) have
// no symbol, as gdb's "??".
func TestLLDBVariants(t *testing.T) {
	snap, skipped := parseLLDBFile(t, "variant_tba_count3.txt")
	checkSkipped(t, skipped)
	for _, th := range snap.Processes[0].Threads {
		if len(th.Stack) != 3 {
			t.Errorf("thread %d: %d frames, want 3", th.Tid, len(th.Stack))
		}
	}
	snap, skipped = parseLLDBFile(t, "variant_core_bt_all.txt")
	checkSkipped(t, skipped)
	if p := snap.Processes[0]; p.Exe != "/tmp/dumpgen-variants/abba" || len(p.Threads) != 3 {
		t.Errorf("core: exe %q, %d threads", p.Exe, len(p.Threads))
	}
	snap, _ = parseLLDBFile(t, "variant_stripped_bt_all.txt")
	unnamed := 0
	for _, th := range snap.Processes[0].Threads {
		for _, f := range th.Stack {
			if f.Module == "abba_stripped" {
				unnamed++
				if f.Func != "" {
					t.Errorf("stripped: frame %+v, want lldb's ___lldb_unnamed_symbol read as no symbol", f)
				}
			}
		}
	}
	if unnamed == 0 {
		t.Error("stripped: no frame in the stripped executable")
	}
}

// TestLLDBGuiPane: lldb gui's Threads pane copied with its box and tree
// (scrcpy#5536, https://github.com/Genymobile/scrcpy/issues/5536: the
// reporter's lldb had no `thread apply all bt`; testdata/corpus) reads
// as lldb: the process, its threads with their tids, and frames named
// by symbol, the copy cut inside thread #3.
func TestLLDBGuiPane(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("..", "testdata", "corpus", "lldbgui-scrcpy-5536-client-blocked-in-accept-server-never-connects", "dump.txt"))
	if err != nil {
		t.Fatal(err)
	}
	snap, _, format, err := Parse(bytes.NewReader(in), "")
	if err != nil || format != "lldb" || len(snap.Processes) != 1 {
		t.Fatalf("format %q, %v", format, err)
	}
	p := snap.Processes[0]
	var got []string
	for _, th := range p.Threads {
		var fs []string
		for _, f := range th.Stack {
			fs = append(fs, f.Func)
		}
		got = append(got, strconv.Itoa(th.Tid)+": "+strings.Join(fs, " "))
	}
	want := []string{
		"30909974: __semwait_signal nanosleep SDL_Delay_REAL SDL_WaitEventTimeout_REAL await_for_server scrcpy main_scrcpy main start",
		"30910023: __workq_kernreturn _pthread_wqthread start_wqthread",
		"30910024: __accept net_accept net_accept_intr sc_server_connect_to",
	}
	if p.Pid != 22068 || !reflect.DeepEqual(got, want) {
		t.Errorf("pid %d, threads\n%s\nwant\n%s", p.Pid, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// silent: a tree drawn with the same glyphs outside a box is left
	// as it is (a hand-drawn call tree's nesting)
	tree := "main\n├─ run\n│  └─ lock\n"
	if got := repairText(t, tree); got != tree {
		t.Errorf("a tree outside a box was changed: %q", got)
	}
}

// repairText runs the repairer alone over in.
func repairText(t *testing.T, in string) string {
	t.Helper()
	rp := newRepairer(strings.NewReader(in))
	var b strings.Builder
	for {
		l, ok := rp.next()
		if !ok {
			break
		}
		b.WriteString(l.text + "\n")
	}
	return b.String()
}
