package stacks

import (
	"bytes"
	"github.com/hangdoc/hangdoc/internal/bigdump"

	"reflect"
	"strings"
	"testing"
)

func parseGDBFile(t *testing.T, name string) (*Snapshot, []Skipped) {
	t.Helper()
	return parseStoredDump(t, "gdb", name, ParseGDB)
}

func TestParseGDBGolden(t *testing.T) {
	checkDumpGoldens(t, "gdb", ParseGDB, 0)
}

func TestParseGDBMutexO2(t *testing.T) {
	snap, skipped := parseGDBFile(t, "mutex_o2.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v, want nothing: every line of gdb -batch output is understood", skipped)
	}
	if snap.Source != "gdb" || snap.Schema != Schema || len(snap.Processes) != 1 {
		t.Fatalf("snapshot %+v", snap)
	}
	p := snap.Processes[0]
	if len(p.Threads) != 5 {
		t.Fatalf("%d threads, want 5 (the stop-location echo is not a thread)", len(p.Threads))
	}
	if p.Pid == 0 || p.Pid != p.Threads[4].Tid {
		t.Errorf("pid %d, want the main thread's tid %d", p.Pid, p.Threads[4].Tid)
	}
	dog := threadByName(t, p, "dog")
	checkFuncs(t, "dog stack", dog.Stack, "futex_wait", "__GI___lll_lock_wait", "lll_mutex_lock_optimized", "___pthread_mutex_lock",
		"take_lock", "dog_fetch", "dog_dig", "dog_sniff", "dog_wander", "dog_worker", "start_thread", "clone3")
	checkInlined(t, "dog", dog.Stack, true, false, true, false, false, false, false, false, false, false, false, false)
	f0, f2, f3, f4 := dog.Stack[0], dog.Stack[2], dog.Stack[3], dog.Stack[4]
	if f0.File != "../sysdeps/nptl/futex-internal.h" || f0.Line != 146 || f0.PC != 0 {
		t.Errorf("#0 = %+v", f0)
	}
	if f2.PC != 0x00007fd187543482 || f3.PC != f2.PC {
		t.Errorf("#2 pc %#x, #3 pc %#x: want both 0x7fd187543482 (one machine frame)", f2.PC, f3.PC)
	}
	if f4.PC != 0x0000560a61b687b7 || f4.File != "" || f4.Line != 0 || f4.Module != "" {
		t.Errorf("#4 = %+v", f4)
	}
	for _, th := range p.Threads {
		if th.Tid == 0 || th.Name == "" || len(th.Stack) == 0 || len(th.Notes) != 0 {
			t.Errorf("thread %+v", th)
		}
	}
}

func TestParseGDBStripped(t *testing.T) {
	snap, _ := parseGDBFile(t, "mutex_stripped.txt")
	dog := threadByName(t, snap.Processes[0], "dog")
	for _, f := range dog.Stack[4:10] {
		if f.Func != "" || f.Name() != "??" || f.PC == 0 {
			t.Errorf("stripped frame %+v: want no name and a PC", f)
		}
	}
	if dog.Stack[10].Func != "start_thread" {
		t.Errorf("libc frames lost: %q", funcs(dog.Stack))
	}
}

func TestParseGDBFullMatchesPlain(t *testing.T) {
	full, skipped := parseGDBFile(t, "mutex_o0g_full.txt")
	if len(skipped) != 0 {
		t.Errorf("bt full: skipped %v; locals are understood", skipped)
	}
	core, _ := parseGDBFile(t, "mutex_o0g_core.txt")
	// Both come from the -O0 -g build: same functions in every thread.
	fp, cp := full.Processes[0], core.Processes[0]
	if len(fp.Threads) != 5 || len(cp.Threads) != 5 {
		t.Fatalf("threads: bt full %d, core %d; want 5", len(fp.Threads), len(cp.Threads))
	}
	for i := range fp.Threads {
		if a, b := funcs(fp.Threads[i].Stack), funcs(cp.Threads[i].Stack); !reflect.DeepEqual(a, b) {
			t.Errorf("thread %d: bt full %q\ncore %q", i, a, b)
		}
	}
	dog := threadByName(t, fp, "dog")
	if f := dog.Stack[5]; f.Func != "dog_fetch" || f.Line != 116 || !strings.HasSuffix(f.File, "mutex_o2.c") {
		t.Errorf("dog #5 = %+v", f)
	}
	if !reflect.DeepEqual(cp.Cmdline, []string{"./mutex_o0g"}) || cp.Exe != "./mutex_o0g" {
		t.Errorf("core: cmdline %q exe %q", cp.Cmdline, cp.Exe)
	}
	if cp.Pid != cp.Threads[4].Tid || cp.Pid == 0 {
		t.Errorf("core: pid %d, main tid %d", cp.Pid, cp.Threads[4].Tid)
	}
}

func TestParseGDBCxx(t *testing.T) {
	snap, _ := parseGDBFile(t, "cxx_mutex.txt")
	p := snap.Processes[0]
	waiter := threadByName(t, p, "waiter")
	w5 := waiter.Stack[5].Func
	if !strings.HasPrefix(w5, "std::condition_variable::wait<hangdoc_patient::Mailbox<") ||
		!strings.HasSuffix(w5, "::take(int)::{lambda()#1})") {
		t.Errorf("waiter #5 = %q", w5)
	}
	if got := FuncBase(w5); !strings.HasPrefix(got, "std::condition_variable::wait<") {
		t.Errorf("FuncBase(waiter #5) = %q", got)
	}
	if f := waiter.Stack[12]; f.Func != "" || f.Module != "/lib/x86_64-linux-gnu/libstdc++.so.6" || f.PC == 0 {
		t.Errorf("waiter #12 = %+v", f)
	}
	nested := threadByName(t, p, "nested")
	want := map[int]string{
		5:  "std::mutex::lock",
		7:  "hangdoc_patient::Guarded<int>::update",
		8:  "hangdoc_patient::Relay<int, 0>::forward",
		12: "operator()",
		13: "std::__invoke_impl<void, main()::<lambda()> >",
		17: "std::thread::_State_impl<std::thread::_Invoker<std::tuple<main()::<lambda()> > > >::_M_run(void)",
	}
	for i, w := range want {
		if got := nested.Stack[i].Func; got != w {
			t.Errorf("nested #%d = %q, want %q", i, got, w)
		}
	}
	if !nested.Stack[5].Inlined || !nested.Stack[4].Inlined || nested.Stack[7].Inlined || nested.Stack[5].PC != nested.Stack[4].PC {
		t.Errorf("nested #4..#7 inlined into update: %+v", nested.Stack[4:8])
	}
	main := threadByTid(t, p, p.Pid)
	if got := main.Stack[4].Func; got != "std::thread::join()" {
		t.Errorf("main #4 = %q, want the symbol as gdb printed it", got)
	}
}

// The same threads, pasted from an interactive gdb on an 80-column color
// terminal: wrapped frames, ANSI colors, CRLF, `thread 4` + `bt`.
func TestParseGDBTerminal(t *testing.T) {
	snap, skipped := parseGDBFile(t, "cxx_mutex_tty_bt.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	if len(p.Threads) != 1 {
		t.Fatalf("%d threads, want 1 (frame #0 echoed by `thread 4` is not a thread)", len(p.Threads))
	}
	th := p.Threads[0]
	if th.Tid != 10956 || p.Pid != 10952 || p.Exe != "/tmp/dumpgen/cxx_mutex" {
		t.Errorf("tid %d pid %d exe %q", th.Tid, p.Pid, p.Exe)
	}
	if len(th.Stack) != 21 {
		t.Fatalf("%d frames, want 21: %q", len(th.Stack), funcs(th.Stack))
	}
	plain, _ := parseGDBFile(t, "cxx_mutex.txt")
	ref := threadByName(t, plain.Processes[0], "nested")
	for i := range th.Stack {
		a, b := th.Stack[i], ref.Stack[i]
		if a.Func != b.Func || a.File != b.File || a.Line != b.Line || a.Module != b.Module || a.Inlined != b.Inlined {
			t.Errorf("#%d wrapped %+v\n   plain %+v", i, a, b)
		}
	}
	if f := th.Stack[7]; f.Func != "hangdoc_patient::Guarded<int>::update" || f.Line != 37 {
		t.Errorf("#7 (wrapped inside its arguments) = %+v", f)
	}
	if f := th.Stack[15]; f.Line != 252 {
		t.Errorf("#15 (wrapped after its '(') = %+v", f)
	}
}

func TestParseGDBSignal(t *testing.T) {
	for _, name := range []string{"sighandler.txt", "sighandler_bt_noaddr.txt"} {
		t.Run(name, func(t *testing.T) {
			snap, skipped := parseGDBFile(t, name)
			if len(skipped) != 0 {
				t.Errorf("skipped %v", skipped)
			}
			var victim *Thread
			for _, th := range snap.Processes[0].Threads {
				if len(th.Stack) == 10 {
					victim = th
				}
			}
			if victim == nil || victim.Tid == 0 {
				t.Fatalf("no victim thread with a tid: %+v", snap.Processes[0].Threads)
			}
			checkFuncs(t, "victim", victim.Stack, "__GI___libc_read", "__GI___libc_read", "handler_blocks", "on_usr1",
				"<signal handler called>", "__libc_pause", "interrupted_work", "victim_main", "start_thread", "clone3")
			if !victim.Stack[4].Signal || victim.Stack[4].Func != "" || victim.Stack[3].Signal {
				t.Errorf("signal frame: %+v", victim.Stack[3:6])
			}
			noaddr := strings.Contains(name, "noaddr")
			if victim.Stack[0].Inlined == noaddr {
				t.Errorf("#0 Inlined = %v; inlining can be told only with addresses", victim.Stack[0].Inlined)
			}
			for _, f := range victim.Stack {
				if noaddr && (f.PC != 0 || f.Inlined) {
					t.Errorf("no addresses printed, yet %+v", f)
				}
			}
		})
	}
}

func TestParseGDBPython(t *testing.T) {
	snap, skipped := parseGDBFile(t, "python_lock.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	if len(p.Threads) != 2 {
		t.Fatalf("%d threads", len(p.Threads))
	}
	main := threadByTid(t, p, p.Pid)
	found := false
	for _, f := range main.Stack {
		if f.Func == "PyThread_acquire_lock_timed" {
			found = true
		}
	}
	if !found {
		t.Errorf("main: %q", funcs(main.Stack))
	}

	// gdb's advice about auto-load safe-path is prose: skipped, not a
	// thread; its warning line becomes a note.
	snap, skipped = parseGDBFile(t, "python_lock_autoload.txt")
	if len(skipped) != 1 || skipped[0].String() != "lines 7–15 skipped: not a stack" {
		t.Errorf("skipped %v, want one range over the auto-load advice", skipped)
	}
	p = snap.Processes[0]
	if len(p.Threads) != 2 || len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "auto-loading has been declined") {
		t.Errorf("threads %d notes %q", len(p.Threads), p.Notes)
	}
}

func TestParseGDBPasted(t *testing.T) {
	snap, skipped := parseGDBFile(t, "pasted_issue.md")
	p := snap.Processes[0]
	var names []string
	for _, th := range p.Threads {
		names = append(names, th.Name)
	}
	if want := []string{"dog", "cat", "bee", "ant", "mutex_o2"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("threads %q, want %q", names, want)
	}
	if got := funcs(threadByName(t, p, "bee").Stack); len(got) != 10 || got[5] != "bee_dance" {
		t.Errorf("bee (CI timestamps): %q", got)
	}
	ant := threadByName(t, p, "ant")
	if ant.Stack[5].Func != "ant_ma" || len(ant.Stack) != 9 || len(ant.Notes) != 1 || !strings.Contains(ant.Notes[0], "cut") {
		t.Errorf("ant: %q notes %q", funcs(ant.Stack), ant.Notes)
	}
	main := threadByName(t, p, "mutex_o2")
	if len(main.Stack) != 1 || main.Stack[0].Func != "__futex_abstimed_wait_common64" || len(main.Notes) != 1 {
		t.Errorf("main: %+v", main)
	}
	if p.Pid != main.Tid {
		t.Errorf("pid %d, want thread 1's tid %d", p.Pid, main.Tid)
	}
	checkSkipped(t, skipped, "lines 1–3 skipped: not a stack", "line 34 skipped: not a stack", "lines 62–64 skipped: not a stack")
}

func TestParseGDBFrames(t *testing.T) {
	checkFrameLines(t, ParseGDB, []frameCase{
		{`#0  0x00007f0000001000 in foo (a=1, s=0x1 "x)(y") at x.c:12`,
			Frame{Func: "foo", PC: 0x7f0000001000, File: "x.c", Line: 12, Args: []Arg{NewArg("a", "1"), NewArg("s", `0x1 "x)(y"`)}}, false},
		{`#0  bar (c=40 '(') at dir with space/y.c:7`,
			Frame{Func: "bar", File: "dir with space/y.c", Line: 7, Args: []Arg{NewArg("c", "40 '('")}}, false},
		{`#0  baz (c=39 '\'', d=41 ')') at y.c:7`,
			Frame{Func: "baz", File: "y.c", Line: 7, Args: []Arg{NewArg("c", `39 '\''`), NewArg("d", "41 ')'")}}, false},
		{`#0  0x0000000000401136 in Foo::operator<(Foo const&) const (this=0x1, o=...) at f.cc:3`,
			Frame{Func: "Foo::operator<(Foo const&) const", PC: 0x401136, File: "f.cc", Line: 3, Args: []Arg{NewArg("this", "0x1"), NewArg("o", "...")}}, false},
		{`#0  0x0000000000401136 in std::operator<< <std::char_traits<char> > (__out=..., __s=0x4 "at x.c:1") at /usr/include/c++/12/ostream:611`,
			Frame{Func: "std::operator<< <std::char_traits<char> >", PC: 0x401136, File: "/usr/include/c++/12/ostream", Line: 611,
				Args: []Arg{NewArg("__out", "..."), NewArg("__s", `0x4 "at x.c:1"`)}}, false},
		{`#0  0x0000000000401136 in process(int) [clone .isra.0] (n=3) at p.cc:9`,
			Frame{Func: "process(int) [clone .isra.0]", PC: 0x401136, File: "p.cc", Line: 9, Args: []Arg{NewArg("n", "3")}}, false},
		{`#0  0x00007f0000001000 in ?? ()`, Frame{PC: 0x7f0000001000}, false},
		{`#0  0x00007f0000001000 in pthread_cond_wait@@GLIBC_2.3.2 () from /lib64/libpthread.so.0`,
			Frame{Func: "pthread_cond_wait@@GLIBC_2.3.2", PC: 0x7f0000001000, Module: "/lib64/libpthread.so.0"}, false},
		{`#0  runtime.futex () at /usr/lib/go/src/runtime/sys_linux_amd64.s:557`,
			Frame{Func: "runtime.futex", File: "/usr/lib/go/src/runtime/sys_linux_amd64.s", Line: 557}, false},
		{`#0  0x00005555555551a9 in (anonymous namespace)::helper (x=<optimized out>) at a.cc:4`,
			Frame{Func: "(anonymous namespace)::helper", PC: 0x5555555551a9, File: "a.cc", Line: 4, Args: []Arg{NewArg("x", "<optimized out>")}}, false},
		{`#0  0x00007f0000001000 in <signal handler called>`, Frame{Signal: true, PC: 0x7f0000001000}, false},
		{`#0  0x00007f0000001000 in std::vector<int, std::allocator<int> >::push_back (this=0x1, __x=`,
			Frame{Func: "std::vector<int, std::allocator<int> >::push_back", PC: 0x7f0000001000}, true},
		{`#0  0x00007f0000001000 in std::vector<int, std::alloc`,
			Frame{Func: "std::vector<int, std::alloc", PC: 0x7f0000001000}, true},
		{`#0  0x00007f00000`, Frame{}, true},
		{`#0  main () at t.c:`, Frame{Func: "main"}, true},
		// pstack variants pad the columns (hand-written after their shape)
		{`#0  0x00007f8b2b0a4b3d  in  __lll_lock_wait ()  from /lib64/libpthread.so.0`,
			Frame{Func: "__lll_lock_wait", PC: 0x7f8b2b0a4b3d, Module: "/lib64/libpthread.so.0"}, false},
		{`#0  0x0000000000400a1c  in  worker (arg=0x0)  at t.c:12`,
			Frame{Func: "worker", PC: 0x400a1c, File: "t.c", Line: 12, Args: []Arg{NewArg("arg", "0x0")}}, false},
	})
}

func TestParseGDBArgs(t *testing.T) {
	tests := []struct {
		args string
		want []Arg
	}{
		{"", nil},
		{"...", nil},
		{"mutex=0x5555555580a0 <server_lock>", []Arg{NewArg("mutex", "0x5555555580a0 <server_lock>")}},
		{"futex=futex@entry=0x560a61b6b100 <the_lock>, private=0",
			[]Arg{NewArg("futex", "0x560a61b6b100 <the_lock>"), NewArg("private", "0")}},
		{"private=128, cancel=true, abstime=0x0, op=265, expected=10221, futex_word=0x7fd1874b3990",
			[]Arg{NewArg("private", "128"), NewArg("cancel", "true"), NewArg("abstime", "0x0"), NewArg("op", "265"), NewArg("expected", "10221"), NewArg("futex_word", "0x7fd1874b3990")}},
		{"p={a = 1, b = {2, 3}}, s=\"a, b\" 'x' <repeats 20 times>, c=44 ','",
			[]Arg{NewArg("p", "{a = 1, b = {2, 3}}"), NewArg("s", "\"a, b\" 'x' <repeats 20 times>"), NewArg("c", "44 ','")}},
		{"f=0x401136 <Foo::operator<(Foo const&) const>, n=2",
			[]Arg{NewArg("f", "0x401136 <Foo::operator<(Foo const&) const>"), NewArg("n", "2")}},
		{"x=a < b, y=2", []Arg{NewArg("x", "a < b"), NewArg("y", "2")}},
		{"~r0=0, self=0xc000010000", []Arg{NewArg("~r0", "0"), NewArg("self", "0xc000010000")}},
		{"this=0x7ffd1e2c, __m=...", []Arg{NewArg("this", "0x7ffd1e2c"), NewArg("__m", "...")}},
		{"not an argument, x=1", []Arg{NewArg("x", "1")}},
	}
	for _, tt := range tests {
		if got := parseGDBArgList(tt.args); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s\n got %+v\nwant %+v", tt.args, got, tt.want)
		}
	}
	long := "v=" + strings.Repeat("x", 10000) + ", " + strings.Repeat("a=1, ", 100)
	got := parseGDBArgList(long)
	if len(got) != maxArgs || len(got[0].Value) > maxArgValue+len("…") {
		t.Errorf("long list: %d args, first value %d bytes", len(got), len(got[0].Value))
	}

	// In a dump: the frames keep their arguments, and the snapshot says so.
	snap, _, err := ParseGDB(strings.NewReader("#0  ___pthread_mutex_lock (mutex=0x5555555580a0 <server_lock>) at ./nptl/pthread_mutex_lock.c:93\n#1  0x0000555555555380 in blas_thread_init () at openblas_relock.c:72\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := snap.Processes[0].Threads[0].Stack
	if !snap.Evidence.Arguments || !reflect.DeepEqual(st[0].Args, []Arg{NewArg("mutex", "0x5555555580a0 <server_lock>")}) || st[1].Args != nil {
		t.Errorf("evidence %+v, frames %+v", snap.Evidence, st)
	}
	// A frame cut inside its argument list keeps none of them.
	snap, _, _ = ParseGDB(strings.NewReader("#0  0x00007f0000001000 in lock (m=0x55555\n"))
	if f := snap.Processes[0].Threads[0].Stack[0]; f.Args != nil || snap.Evidence.Arguments {
		t.Errorf("cut frame: %+v, evidence %+v", f, snap.Evidence)
	}
}

func TestParseGDBHeadersAndNumbering(t *testing.T) {
	in := `
Thread 3 (LWP 1235):
#0  0x0000000000401000 in spin ()
#1  0x0000000000401100 in main ()
Thread 2.1 (Thread 0x7f0000000700 (LWP 1234) "a (weird) \"name"):
#0  0x0000000000401000 in a ()
#3  0x0000000000401300 in d ()
Backtrace stopped: previous frame inner to this frame (corrupt stack?)
Thread 1 (process 1233):
#0  0x0000000000401000 in main ()
Thread 4 (Thread 0x7f0000000800 (LWP 1240
#1  0x0000000000401000 in b ()
#0  0x0000000000401000 in again ()
`
	snap, skipped, err := ParseGDB(strings.NewReader(in))
	if err != nil || len(skipped) != 0 {
		t.Fatalf("err %v skipped %v", err, skipped)
	}
	p := snap.Processes[0]
	if p.Pid != 1233 || len(p.Threads) != 5 {
		t.Fatalf("pid %d, %d threads", p.Pid, len(p.Threads))
	}
	type row struct {
		no    string
		tid   int
		name  string
		n     int
		notes int
	}
	want := []row{{"3", 1235, "", 2, 0}, {"2.1", 1234, `a (weird) \"name`, 2, 2}, {"1", 1233, "", 1, 0}, {"4", 0, "", 1, 2}, {"", 0, "", 1, 0}}
	for i, w := range want {
		th := p.Threads[i]
		if got := (row{th.Number, th.Tid, th.Name, len(th.Stack), len(th.Notes)}); got != w {
			t.Errorf("thread %d: %+v (notes %q), want %+v", i, got, th.Notes, w)
		}
	}
	if n := p.Threads[1].Notes; !strings.Contains(strings.Join(n, "|"), "frames #1–#2 not in the dump") ||
		!strings.Contains(strings.Join(n, "|"), "Backtrace stopped") {
		t.Errorf("notes %q", n)
	}
}

// A `thread N` + `bt` session names the thread in gdb's "[Switching to
// thread N (…)]": thread 1 is the main thread, whose LWP is the pid, as
// with a "Thread 1 (…)" header; any other number leaves the pid unknown.
func TestParseGDBSwitchingToThreadNumber(t *testing.T) {
	session := func(no string) string {
		return "(gdb) thread " + no + "\n[Switching to thread " + no + " (Thread 0x7f904e3fe700 (LWP 2268))]\n" +
			"#0  __lll_lock_wait () at ../sysdeps/unix/sysv/linux/x86_64/lowlevellock.S:135\n(gdb) bt\n" +
			"#0  __lll_lock_wait () at ../sysdeps/unix/sysv/linux/x86_64/lowlevellock.S:135\n" +
			"#1  0x00007f905120adbd in __GI___pthread_mutex_lock (mutex=0x7f90503a14e0) at ../nptl/pthread_mutex_lock.c:80\n"
	}
	for no, pid := range map[string]int{"1": 2268, "14": 0} {
		snap, _, err := ParseGDB(strings.NewReader(session(no)))
		if err != nil {
			t.Fatal(err)
		}
		p := snap.Processes[0]
		if p.Pid != pid || len(p.Threads) != 1 || p.Threads[0].Tid != 2268 {
			t.Errorf("thread %s: pid %d, %d threads, want pid %d and thread 2268", no, p.Pid, len(p.Threads), pid)
		}
	}
}

// A `thread N` + `bt` session keeps gdb's thread number, which the
// paste's reader names the thread by, and says the process had at least
// N threads (corpus gdb-istgt-197: "[Switching to thread 14 (Thread 0x…
// (LWP 2268))]", the source line echoed with blanks for its tab).
func TestParseGDBSwitchedThreadNumber(t *testing.T) {
	in := `(gdb) thread 14
[Switching to thread 14 (Thread 0x7f904e3fe700 (LWP 2268))]
#0  __lll_lock_wait () at ../sysdeps/unix/sysv/linux/x86_64/lowlevellock.S:135
135    ../sysdeps/unix/sysv/linux/x86_64/lowlevellock.S: No such file or directory.
(gdb) bt
#0  __lll_lock_wait () at ../sysdeps/unix/sysv/linux/x86_64/lowlevellock.S:135
#1  0x00007f905120adbd in __GI___pthread_mutex_lock (mutex=mutex@entry=0x7f90503a14e0) at ../nptl/pthread_mutex_lock.c:80
#2  0x000000000043c7a0 in worker (arg=0x7f90500b0000) at istgt_iscsi.c:6286
(gdb) thread 1.2
[Current thread is 1.2 (Thread 0x7f904e3ff700 (LWP 2269))]
(gdb) bt
#0  0x000000000043c7a0 in other () at istgt_iscsi.c:6286
`
	snap, skipped, _, err := Parse(strings.NewReader(in), "")
	if err != nil || len(skipped) != 0 {
		t.Fatalf("err %v skipped %v", err, skipped)
	}
	p := snap.Processes[0]
	if len(p.Threads) != 2 {
		t.Fatalf("%d threads", len(p.Threads))
	}
	for i, w := range []struct {
		no  string
		tid int
		n   int
	}{{"14", 2268, 3}, {"1.2", 2269, 1}} {
		th := p.Threads[i]
		if th.Number != w.no || th.Tid != w.tid || len(th.Stack) != w.n {
			t.Errorf("thread %d: number %q tid %d, %d frames; want %+v", i, th.Number, th.Tid, len(th.Stack), w)
		}
	}
	if n := strings.Join(p.Notes, "|"); !strings.Contains(n, "holds 2 of the process's 14 or more threads") {
		t.Errorf("notes %q", p.Notes)
	}
}

func TestParseGDBErrors(t *testing.T) {
	checkParseErrors(t, ParseGDB, []errorCase{
		{"", "empty input: no gdb backtrace"},
		{"\n\n  \n", "empty input: no gdb backtrace"},
		{"hello\nworld\n", `line 1: not a gdb backtrace: no frame ("#0  …") or thread header ("Thread 2 (…):")`},
		{"[New LWP 5]\n\nsome text\n", `line 3: not a gdb backtrace: no frame ("#0  …") or thread header ("Thread 2 (…):")`},
	})
}

func TestParseGDBReadError(t *testing.T) {
	snap, _, err := ParseGDB(&brokenReader{data: []byte("Thread 1 (LWP 7):\n#0  0x1 in f ()\n")})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err %v", err)
	}
	if snap == nil || len(snap.Processes[0].Threads) != 1 {
		t.Fatalf("what was read before the error is lost: %+v", snap)
	}
}

func TestParseGDBLongLine(t *testing.T) {
	long := "#0  0x0000000000401000 in " + strings.Repeat("x", 1<<20) + " ()\n#1  0x0000000000401100 in main ()\n"
	snap, _, err := ParseGDB(strings.NewReader(long))
	if err != nil {
		t.Fatal(err)
	}
	st := snap.Processes[0].Threads[0].Stack
	if len(st) != 2 || st[1].Func != "main" || len(st[0].Func) > maxLine {
		t.Fatalf("%d frames", len(st))
	}
}

func FuzzParseGDB(f *testing.F) {
	fuzzDumps(f, "gdb", ParseGDB, func(t *testing.T, snap *Snapshot) {
		if len(snap.Processes) != 1 {
			t.Fatalf("%d processes: a gdb dump is of one", len(snap.Processes))
		}
	}, "#0  0x1 in f (\"(\"\n    ) at x:1\n", "Thread 1 (LWP 1):\n#5 a\n#0 b\n")
}

// Inputs that would take quadratic time in a careless parser (long runs
// of '<', wrapped-looking lines, " at " everywhere) stay fast.
func TestParseGDBLinearTime(t *testing.T) {
	cases := map[string]string{
		"open parens":                strings.Repeat("a (\n     b (\n", 20000),
		"wrapped":                    strings.Repeat("#1 f (\n     x (\n", 20000),
		"quotes":                     strings.Repeat("#0  f (\"\"\"\"'('(')))))) at x:1\n", 20000),
		"prose":                      strings.Repeat("zz\n\n", 50000),
		"at":                         "#0  f ()" + strings.Repeat(" at x", 100000) + "\n",
		"angles":                     "#0  f " + strings.Repeat("<", 200000) + "\n",
		"headers":                    strings.Repeat("Thread 1 (LWP 1):\n", 50000),
		"operators":                  "#0  f " + strings.Repeat("operator<", 20000) + "(\n",
		"locals":                     "#0  f ()\n" + strings.Repeat("        x = 1\n", 100000),
		"frame numbers":              strings.Repeat("#3  f ()\n", 50000),
		"arguments":                  "#0  f (" + strings.Repeat("a=<b, c={\"'(", 50000) + ")\n",
		"many frames with arguments": strings.Repeat("#1  f (m=0x5555 <lock>, x=1) at x.c:1\n", 50000),
	}
	checkDumpLinear(t, ParseGDB, cases, allSnapshotsBut(cases, "prose", "open parens"), linearBound)
}

// syntheticGDBDump builds a `thread apply all bt` dump of about size
// bytes from threads10.txt: its thread blocks repeated, each renumbered
// (gdb's thread number and the LWP) so that every thread is new, as gdb
// prints a process with a very large number of threads.
func syntheticGDBDump(t testing.TB, size int) []byte {
	b, err := bigdump.GDB(string(readStoredDump(t, "gdb", "threads10.txt")), size)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkParseGDB100MB reports parse speed (MB/s) and peak heap
// (benchmarkBigDump) on a synthetic gdb dump of about 100 MB.
func BenchmarkParseGDB100MB(b *testing.B) {
	benchmarkBigDump(b, syntheticGDBDump(b, 100<<20), ParseGDB)
}

// BenchmarkParseGDB reports parse speed (MB/s) over every stored dump.
func BenchmarkParseGDB(b *testing.B) {
	benchmarkDumps(b, "gdb", ParseGDB)
}

// TestParseGDBInfoThreads: gdb's `info threads` table gives each thread
// its tid, name and the frame it stopped in; with `thread apply all bt`
// after it, each backtrace replaces its row's frame (one thread each, no
// note); alone, the rows are the threads, and a note says what to paste.
func TestParseGDBInfoThreads(t *testing.T) {
	snap, skipped := parseStoredDump(t, "gdb", "variant_info_threads_bt.txt", ParseGDB)
	checkSkipped(t, skipped)
	p := snap.Processes[0]
	if len(p.Threads) != 3 || len(p.Notes) != 0 {
		t.Fatalf("%d threads, notes %q: want the 3 threads once, no note", len(p.Threads), p.Notes)
	}
	for _, th := range p.Threads {
		if th.Tid == 0 || th.Name == "" || len(th.Stack) < 6 {
			t.Errorf("thread %d %q: %d frames, want the backtrace's", th.Tid, th.Name, len(th.Stack))
		}
	}
	snap, skipped = parseStoredDump(t, "gdb", "variant_info_threads.txt", ParseGDB)
	checkSkipped(t, skipped)
	p = snap.Processes[0]
	if len(p.Threads) != 3 || p.Pid != p.Threads[0].Tid || len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "`thread apply all bt`") {
		t.Fatalf("table alone: pid %d, %d threads, notes %q", p.Pid, len(p.Threads), p.Notes)
	}
	ab := p.Threads[1]
	if ab.Name != "transfer-ab" || len(ab.Stack) != 1 || ab.Stack[0].Func != "futex_wait" || ab.Stack[0].Line != 146 ||
		len(ab.Stack[0].Args) != 3 || ab.Stack[0].Args[2].Value != "0x560d194030e0 <lock_b>" {
		t.Errorf("row 2: %+v", ab)
	}
}

// `info threads` then `bt` (no header: the current thread's) is the
// row's thread with the backtrace, as in the corpus report
// gdb-cpython-91776 (the input below is hand-written after it).
func TestParseGDBInfoThreadsThenBT(t *testing.T) {
	in := "(gdb) info threads\n" +
		"  Id   Target Id                                   Frame \n" +
		"* 1    Thread 0x7f87cc04b280 (LWP 329024) \"python\" 0x00007f87cc3aa454 in do_futex_wait.constprop () from /lib/libpthread.so.0\n" +
		"  2    Thread 0x7f87cc04c280 (LWP 329025) \"python\" 0x00007f87cc3aa454 in do_futex_wait.constprop () from /lib/libpthread.so.0\n" +
		"(gdb) bt\n" +
		"#0  0x00007f87cc3aa454 in do_futex_wait.constprop () from /lib/libpthread.so.0\n" +
		"#1  0x00007f87cc3aa548 in __new_sem_wait_slow.constprop.0 () from /lib/libpthread.so.0\n"
	snap, skipped, err := ParseGDB(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	checkSkipped(t, skipped)
	p := snap.Processes[0]
	if len(p.Threads) != 2 || p.Threads[0].Tid != 329024 || len(p.Threads[0].Stack) != 2 || len(p.Threads[1].Stack) != 1 {
		t.Errorf("threads %+v: want the current row (*) with the bt, the other row alone", p.Threads)
	}
}

// Real pasted `info threads` tables: an older gdb's with rows wrapped
// before "()" (icinga2), an old one without the column header
// (logcabin), detected as gdb and read row by row.
func TestParseGDBInfoThreadsPasted(t *testing.T) {
	for name, want := range map[string]int{"info_threads_icinga2_pasted.txt": 9, "info_threads_logcabin_pasted.txt": 11} {
		snap, _, format, err := Parse(bytes.NewReader(readStoredDump(t, "gdb", name)), "")
		if err != nil || format != "gdb" {
			t.Fatalf("%s: %s, %v", name, format, err)
		}
		p := snap.Processes[0]
		if len(p.Threads) != want {
			t.Errorf("%s: %d threads, want %d", name, len(p.Threads), want)
		}
		for _, th := range p.Threads {
			if th.Tid == 0 || len(th.Stack) != 1 || th.Stack[0].Func == "" || th.Stack[0].Module == "" {
				t.Errorf("%s: thread %+v", name, th)
			}
		}
	}
}
