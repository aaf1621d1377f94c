package stacks

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseEUStackGolden(t *testing.T) {
	checkDumpGoldens(t, "eu-stack", ParseEUStack, 0)
}

func parseEUFile(t *testing.T, name string) (*Snapshot, []Skipped) {
	t.Helper()
	return parseStoredDump(t, "eu-stack", name, ParseEUStack)
}

// `eu-stack -p PID` on mutex_o2: ELF symbols, nothing else.
func TestParseEUStackPlain(t *testing.T) {
	snap, skipped := parseEUFile(t, "mutex_o2.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	if snap.Source != "eu-stack" || snap.Schema != Schema || len(snap.Processes) != 1 || snap.Evidence.Arguments {
		t.Fatalf("snapshot %+v", snap)
	}
	p := snap.Processes[0]
	var tids []int
	for _, th := range p.Threads {
		tids = append(tids, th.Tid)
		if th.Name != "" || len(th.Notes) != 0 {
			t.Errorf("thread %+v", th)
		}
		for _, f := range th.Stack {
			if f.Inlined || f.PC == 0 || f.Module != "" || f.File != "" {
				t.Errorf("thread %d frame %+v", th.Tid, f)
			}
		}
	}
	if p.Pid != 31076 || !reflect.DeepEqual(tids, []int{31076, 31078, 31079, 31080, 31081}) {
		t.Errorf("pid %d tids %v", p.Pid, tids)
	}
	dog := threadByTid(t, p, 31081)
	checkFuncs(t, "dog", dog.Stack, "__GI___lll_lock_wait", "__pthread_mutex_lock@GLIBC_2.2.5", "take_lock", "dog_fetch", "dog_dig",
		"dog_sniff", "dog_wander", "dog_worker", "start_thread", "__clone3")
	if dog.Stack[2].PC != 0x000055926a28c7c7 {
		t.Errorf("dog #2 %+v", dog.Stack[2])
	}
}

// `eu-stack -v`: DWARF names, inlined frames, modules, source lines and
// the activation column, from the same process as the plain dump.
func TestParseEUStackVerbose(t *testing.T) {
	snap, skipped := parseEUFile(t, "mutex_o2_v.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	if p.Exe != "/tmp/dumpgen/mutex_o2" {
		t.Errorf("exe %q (the module of _start)", p.Exe)
	}
	dog := threadByTid(t, p, 31081)
	checkFuncs(t, "dog", dog.Stack, "futex_wait", "__GI___lll_lock_wait", "lll_mutex_lock_optimized", "___pthread_mutex_lock", "take_lock",
		"dog_fetch", "dog_dig", "dog_sniff", "dog_wander", "dog_worker", "start_thread", "__clone3")
	checkInlined(t, "dog", dog.Stack, true, false, true, false, false)
	f0, f3, f4 := dog.Stack[0], dog.Stack[3], dog.Stack[4]
	if f0.File != "../sysdeps/nptl/futex-internal.h" || f0.Line != 146 || f0.Module != "/usr/lib/x86_64-linux-gnu/libc.so.6" {
		t.Errorf("#0 %+v", f0)
	}
	if f3.File != "./nptl/pthread_mutex_lock.c" || f3.Line != 93 || f3.PC != 0x00007f28eac93482 || f3.PC != dog.Stack[2].PC {
		t.Errorf("#3 %+v", f3)
	}
	if f4.Module != "/tmp/dumpgen/mutex_o2" || f4.File != "" || f4.PC != 0x000055926a28c7c7 {
		t.Errorf("#4 %+v (-O2 without -g: no source line)", f4)
	}
	// the same machine frames as the plain dump: non-inlined PCs match
	plain, _ := parseEUFile(t, "mutex_o2.txt")
	mod, _ := parseEUFile(t, "mutex_o2_m.txt")
	for i, th := range p.Threads {
		var pcs []uint64
		for _, f := range th.Stack {
			if !f.Inlined {
				pcs = append(pcs, f.PC)
			}
		}
		for _, other := range []*Thread{plain.Processes[0].Threads[i], mod.Processes[0].Threads[i]} {
			var opcs []uint64
			for _, f := range other.Stack {
				opcs = append(opcs, f.PC)
			}
			if other.Tid != th.Tid || !reflect.DeepEqual(pcs, opcs) {
				t.Errorf("thread %d: -v machine frames %x, other dump (tid %d) %x", th.Tid, pcs, other.Tid, opcs)
			}
		}
	}
	for _, f := range threadByTid(t, mod.Processes[0], 31081).Stack {
		if f.Module == "" || f.File != "" {
			t.Errorf("-m frame %+v", f)
		}
	}
}

func TestParseEUStackSignal(t *testing.T) {
	for _, name := range []string{"sighandler.txt", "sighandler_v.txt"} {
		snap, skipped := parseEUFile(t, name)
		if len(skipped) != 0 {
			t.Errorf("%s: skipped %v", name, skipped)
		}
		victim := threadByTid(t, snap.Processes[0], 31636)
		got := funcs(victim.Stack)
		i := 0
		for i < len(got) && got[i] != "<signal handler called>" {
			i++
		}
		if i == len(got) || victim.Stack[i].Func != "__restore_rt" || got[i-1] != "on_usr1" || got[i+2] != "interrupted_work" {
			t.Errorf("%s: victim %q", name, got)
		}
	}
	snap, _ := parseEUFile(t, "sighandler_v.txt")
	victim := threadByTid(t, snap.Processes[0], 31636)
	// __GI___libc_read inlined into itself (read.c:26 in read.c:24)
	if !victim.Stack[0].Inlined || victim.Stack[1].Inlined || victim.Stack[0].Func != victim.Stack[1].Func {
		t.Errorf("victim #0 %+v #1 %+v", victim.Stack[0], victim.Stack[1])
	}
}

// `eu-stack -b -l`: the module map and each frame's offset in its module.
func TestParseEUStackModules(t *testing.T) {
	snap, skipped := parseEUFile(t, "abba_bl.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	paths := []string{"/tmp/dumpgen/abba", "/usr/lib/x86_64-linux-gnu/libc.so.6", "[vdso: 32098]",
		"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"}
	if len(p.Modules) != len(paths) {
		t.Fatalf("modules %+v", p.Modules)
	}
	for i, m := range p.Modules {
		if m.Path != paths[i] || len(m.BuildID) != 40 || m.Start == 0 || m.End <= m.Start || m.Bias != 0 {
			t.Errorf("module %d = %+v, want %s", i, m, paths[i])
		}
	}
	if m := p.Modules[1]; m.BuildID != "93ac61ec5a8eb1396f9fbd350e3169a558528a40" {
		t.Errorf("libc %+v", m)
	}
	ab := threadByTid(t, p, 32100)
	if f := ab.Stack[2]; f.Func != "take_b_after_a" || f.Offset != 0x1657 || f.PC != 0x0000559d5f665657 {
		t.Errorf("transfer-ab #2 %+v: offset is PC − module start", f)
	}
	if f := ab.Stack[0]; f.Offset != 0x8612b {
		t.Errorf("transfer-ab #0 %+v", f)
	}
}

// `eu-stack -s -i` on the -O0 -g build: source lines and inlined frames
// without modules.
func TestParseEUStackSourceInlines(t *testing.T) {
	snap, skipped := parseEUFile(t, "mutex_o0g_si.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	var ant *Thread
	for _, th := range p.Threads {
		for _, f := range th.Stack {
			if f.Func == "ant_bite" {
				ant = th
			}
		}
	}
	if ant == nil {
		t.Fatalf("no ant_bite in %+v", p.Threads)
	}
	for _, f := range ant.Stack {
		if f.Func == "ant_bite" && (f.Line != 45 || !strings.HasSuffix(f.File, "testdata/patients/mutex_o2.c") || f.Module != "") {
			t.Errorf("ant_bite %+v", f)
		}
	}
}

func TestParseEUStackCxx(t *testing.T) {
	snap, _ := parseEUFile(t, "cxx_mutex.txt")
	p := snap.Processes[0]
	main := threadByTid(t, p, p.Pid)
	if f := main.Stack[2]; f.Func != "std::thread::join()" {
		t.Errorf("main #2 %+v", f)
	}
	nested := threadByTid(t, p, 31456)
	if f := nested.Stack[3]; f.Func != "hangdoc_patient::Relay<int, 0>::forward(hangdoc_patient::Guarded<int>&, int)" {
		t.Errorf("nested #3 %+v", f)
	}
	if f := nested.Stack[8]; f.Func != "" || f.PC == 0 {
		t.Errorf("nested #8 %+v: no symbol", f)
	}
	snap, _ = parseEUFile(t, "cxx_mutex_v.txt")
	nested = threadByTid(t, snap.Processes[0], 31456)
	want := []string{"futex_wait", "__GI___lll_lock_wait", "lll_mutex_lock_optimized", "___pthread_mutex_lock",
		"__gthread_mutex_lock", "std::mutex::lock()", "std::lock_guard<std::mutex>::lock_guard(std::mutex&)",
		"hangdoc_patient::Guarded<int>::update(int)", "hangdoc_patient::Relay<int, 0>::forward(hangdoc_patient::Guarded<int>&, int)"}
	if got := funcs(nested.Stack); !reflect.DeepEqual(got[:len(want)], want) {
		t.Errorf("nested\n got %q\nwant %q", got[:len(want)], want)
	}
	for i := 4; i <= 7; i++ {
		if nested.Stack[i].Inlined != (i < 7) {
			t.Errorf("nested #%d %q Inlined %v", i, nested.Stack[i].Func, nested.Stack[i].Inlined)
		}
	}
}

func TestParseEUStackThreads10(t *testing.T) {
	for _, name := range []string{"threads10.txt", "threads10_m.txt"} {
		snap, skipped := parseEUFile(t, name)
		if len(skipped) != 0 {
			t.Errorf("%s: skipped %v", name, skipped)
		}
		p := snap.Processes[0]
		if len(p.Threads) != 12 || p.Threads[0].Tid != p.Pid {
			t.Fatalf("%s: %d threads", name, len(p.Threads))
		}
		counts := map[string]int{}
		for _, th := range p.Threads {
			for _, f := range th.Stack {
				counts[f.Func]++
			}
		}
		if counts["block_on_cond"] != 4 || counts["block_in_sleep"] != 3 || counts["block_on_pipe"] != 3 || counts["heartbeat"] != 1 {
			t.Errorf("%s: %v", name, counts)
		}
	}
}

// abba's and sighandler's dumps pasted into an issue: prose, a fence with
// the command line, a "> " quote cut inside an address, CI timestamps.
func TestParseEUStackPasted(t *testing.T) {
	snap, skipped := parseEUFile(t, "pasted_issue.md")
	checkSkipped(t, skipped, "line 1 skipped: not a stack", "line 39 skipped: not a stack", "line 50 skipped: not a stack")
	if len(snap.Processes) != 2 {
		t.Fatalf("%d processes", len(snap.Processes))
	}
	abba, sig := snap.Processes[0], snap.Processes[1]
	if abba.Pid != 32098 || len(abba.Threads) != 3 || sig.Pid != 31634 || len(sig.Threads) != 2 {
		t.Fatalf("processes %+v %+v", abba, sig)
	}
	ba := threadByTid(t, abba, 32101)
	if got := funcs(ba.Stack); len(got) != 4 || got[2] != "lll_mutex_lock_optimized" || ba.Stack[3].PC != 0 || got[3] != "??" {
		t.Errorf("32101 %q %+v", got, ba.Stack[3])
	}
	if len(ba.Notes) != 1 || !strings.Contains(ba.Notes[0], "line 48: frame #3 cut mid-way") {
		t.Errorf("32101 notes %q", ba.Notes)
	}
	victim := threadByTid(t, sig, 31636)
	if got := funcs(victim.Stack); len(got) != 7 || got[4] != "<signal handler called>" || victim.Stack[2].Line != 27 {
		t.Errorf("victim (CI timestamps) %q", got)
	}
}

func TestParseEUStackFrames(t *testing.T) {
	checkFrameLines(t, ParseEUStack, []frameCase{
		{"#0  0x00007f0000001000 read", Frame{Func: "read", PC: 0x7f0000001000}, false},
		{"#0  0x00007f0000001000", Frame{PC: 0x7f0000001000}, false},
		{"#0  0x08049000 main", Frame{Func: "main", PC: 0x8049000}, false},
		{"#0  0x00007f0000001000 - 1 - /usr/lib/libstdc++.so.6.0.30",
			Frame{PC: 0x7f0000001000, Module: "/usr/lib/libstdc++.so.6.0.30"}, false},
		{"#0  0x00007f0000001000 - /usr/lib/libstdc++.so.6.0.30",
			Frame{PC: 0x7f0000001000, Module: "/usr/lib/libstdc++.so.6.0.30"}, false},
		{"#0  0x00007f0000001000     __vdso_clock_gettime - [vdso: 123]",
			Frame{Func: "__vdso_clock_gettime", PC: 0x7f0000001000, Module: "[vdso: 123]"}, false},
		{"#0  0x00007f0000001000 - 1 operator-(A const&, A const&) - /opt/my app/a.out",
			Frame{Func: "operator-(A const&, A const&)", PC: 0x7f0000001000, Module: "/opt/my app/a.out"}, false},
		{"#0  0x00007f0000001000 _ZNSt6thread4joinEv", Frame{Func: "std::thread::join()", PC: 0x7f0000001000}, false},
		{"#0  0x00007f0000001000 __restore_rt", Frame{Func: "__restore_rt", PC: 0x7f0000001000, Signal: true}, false},
		{"#0  0x00007f00000", Frame{}, true},
	})
}

// eu-stack's stderr messages, -1 (no PID line), a thread listed again,
// frames missing, recursion without -i.
func TestParseEUStackMessages(t *testing.T) {
	in := `TID 10:
#0  0x0000000000401000 spin
#1  0x0000000000401100 f
#2  0x0000000000401100 f
#3  0x0000000000401100 f
eu-stack: tid 10: shown max number of frames (4, use -n 0 for unlimited)
TID 11:
#0  0x0000000000401000 a
#2  0x0000000000401200 c
eu-stack: dwfl_thread_getframes tid 11 at 0x401200 in /x: No DWARF information found
TID 12:
#0  0x0000000000401000 old
TID 12:
#0  0x0000000000401000 new
eu-stack: Couldn't show any frames.
`
	snap, skipped, err := ParseEUStack(strings.NewReader(in))
	if err != nil || len(skipped) != 0 {
		t.Fatalf("err %v skipped %v", err, skipped)
	}
	p := snap.Processes[0]
	if p.Pid != 0 || len(p.Threads) != 3 {
		t.Fatalf("pid %d, %d threads", p.Pid, len(p.Threads))
	}
	t10, t11, t12 := p.Threads[0], p.Threads[1], p.Threads[2]
	for _, f := range t10.Stack {
		if f.Inlined {
			t.Errorf("recursion read as inlining: %+v", t10.Stack)
		}
	}
	if !reflect.DeepEqual(t10.Notes, []string{"eu-stack: shown max number of frames (4, use -n 0 for unlimited)"}) {
		t.Errorf("tid 10 notes %q", t10.Notes)
	}
	if !reflect.DeepEqual(t11.Notes, []string{"frame #1 not in the dump",
		"eu-stack: dwfl_thread_getframes tid 11 at 0x401200 in /x: No DWARF information found"}) {
		t.Errorf("tid 11 notes %q", t11.Notes)
	}
	if got := funcs(t12.Stack); !reflect.DeepEqual(got, []string{"new"}) {
		t.Errorf("tid 12 %q", got)
	}
	if !reflect.DeepEqual(p.Notes, []string{"eu-stack: Couldn't show any frames."}) {
		t.Errorf("notes %q", p.Notes)
	}
}

func TestParseEUStackErrors(t *testing.T) {
	checkParseErrors(t, ParseEUStack, []errorCase{
		{"", "empty input: no eu-stack output"},
		{"\n \n", "empty input: no eu-stack output"},
		{"hello\n", `line 1: not eu-stack output: no thread ("TID 1234:") or frame ("#0  0x…")`},
		{"#0  0x00007f0000001000 in f () from /lib/x.so\n", `line 1: not eu-stack output: no thread ("TID 1234:") or frame ("#0  0x…")`},
	})
	snap, _, err := ParseEUStack(&brokenReader{data: []byte("TID 7:\n#0  0x0000000000000001 f\n")})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || snap == nil || len(snap.Processes[0].Threads) != 1 {
		t.Fatalf("read error: snap %+v err %v", snap, err)
	}
}

// Detection tells eu-stack from gdb, whose frames also start "#N  0x…".
func TestSniffEUStack(t *testing.T) {
	eu := "TID 7:\n#0  0x00007f0000001000 read\n#1  0x00007f0000001100 main\n"
	gdb := "#0  0x00007f0000001000 in read () from /lib/libc.so.6\n#1  0x00007f0000001100 in main ()\n"
	if _, _, name, err := Parse(strings.NewReader(eu), ""); name != "eu-stack" {
		t.Errorf("eu-stack detected as %q (%v)", name, err)
	}
	if _, _, name, err := Parse(strings.NewReader(gdb), ""); name != "gdb" {
		t.Errorf("gdb detected as %q (%v)", name, err)
	}
	if s := sniffEUStack([]byte(gdb)); s != 0 {
		t.Errorf("eu-stack sniffs %d on gdb frames", s)
	}
}

func FuzzParseEUStack(f *testing.F) {
	fuzzDumps(f, "eu-stack", ParseEUStack, checkToolSnapshot,
		"PID 1 - process module memory map\n0x1-0x2 a\n  [ab]\n  -\n  -\n  x\nTID 2:\n#0  0x1 - 1 - \n    [ab]@0x5+0x1\n    :3\n",
		"TID 1:\n#3  0x1\n#0  0x1 a\n#1  0x1 b\neu-stack: tid 9: x\n")
}

func TestParseEUStackLinearTime(t *testing.T) {
	cases := toolLinearCases("#0  0x0000000000401000 ")
	cases["tids"] = strings.Repeat("TID 1:\n", 200000)
	cases["new tids"] = func() string {
		var b strings.Builder
		for i := 1; i <= 200000; i++ {
			b.WriteString("TID ")
			b.WriteString(strings.Repeat("1", 1+i%8))
			b.WriteString(":\n#0  0x0000000000401000 f\n")
		}
		return b.String()
	}()
	cases["new pids"] = func() string {
		var b strings.Builder
		for i := 1; i <= 200000; i++ {
			b.WriteString("PID " + strconv.Itoa(i) + " - process\nTID " + strconv.Itoa(i) + ":\n#0  0x0000000000401000 f\n")
		}
		return b.String()
	}()
	cases["frame numbers"] = strings.Repeat("#3  0x0000000000401000 f\n", 200000)
	cases["same pc"] = "TID 1:\n" + strings.Repeat("#1  0x0000000000401000 f\n    x.c:1\n", 200000)
	cases["modules"] = "PID 1 - process module memory map\n" + strings.Repeat("0x1-0x2 a\n  [ab]\n  /x\n  -\n", 100000)
	cases["messages"] = strings.Repeat("eu-stack: tid 5: oops\n", 200000)
	checkDumpLinear(t, ParseEUStack, cases, allSnapshotsBut(cases, "prose", "long lines", "modules"), toolLinearBound)
}

// BenchmarkParseEUStack reports parse speed (MB/s) over every stored dump.
func BenchmarkParseEUStack(b *testing.B) {
	benchmarkDumps(b, "eu-stack", ParseEUStack)
}
