package stacks

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The sample and spindump reports in testdata/dumps/{sample,spindump}
// cannot be produced here (macOS tools); they are built from the
// documented layouts — spindump(8)'s description of the heavy and
// timeline formats, and the real reports quoted in public bug reports and
// blogs (sample's "Call graph" with its "+ ! : |" markers and "(in
// image) + offset  [address]  file:line" frames, "Thread_N: name",
// "DispatchQueue_N: label  (serial)"; spindump's "Thread 0x…  Thread name
// \"…\"  N samples (a-b)  priority P (base P)  cpu time Xs", "*" kernel
// frames, "(file.swift:31,1 in image + offset)", timeline ranges, "(blocked
// by turnstile waiting for NAME [PID] thread 0x…)", "waiting for this
// thread") — with the stacks of the project's patients as they would be on
// macOS:
//
//	sample/mlx_fence_spin.txt        python3.11 + MLX, MLX_METAL_FAST_SYNCH=1:
//	                                 the main thread in Fence::wait in every
//	                                 sample, at two addresses
//	sample/pasted_flattened.md       mutex_o2, pasted into an issue: the last
//	                                 thread lost its indentation
//	sample/pasted_quoted_cut.md      the MLX report quoted with "> ", cut
//	spindump/mutex_o2_heavy.txt      mutex_o2 (heavy format): workers blocked
//	                                 by turnstile on main, main on ant (join)
//	spindump/mlx_fence_timeline.txt  the MLX spin (timeline format): Fence::wait
//	                                 at 3 addresses in runs, cpu time 9.964 s;
//	                                 the scheduler blocked on a mutex main holds
//	spindump/sigrelock_self.txt      sigrelock: "_sigtramp", "waiting for this
//	                                 thread"
//	spindump/pasted_quoted.md        part of mutex_o2_heavy quoted, cut
//	spindump/pasted_heaviest_only.md the "Heaviest stack" of a hang report
//
// The renderers (two small Python functions) lay out a tree exactly as
// described above: count at column base+2·depth; the n-th marker of a
// sample line is "+", "!", ":", "|" in turn at the column of each ancestor
// with a later sibling; spindump kernel frames put "*" just before the
// count.

func TestParseSampleGolden(t *testing.T) {
	checkDumpGoldens(t, "sample", ParseSample, 0)
}

func TestParseSpindumpGolden(t *testing.T) {
	checkDumpGoldens(t, "spindump", ParseSpindump, 0)
}

func TestParseSampleSpin(t *testing.T) {
	snap, skipped := parseStoredDump(t, "sample", "mlx_fence_spin.txt", ParseSample)
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	if snap.Samples != 2613 || time.Duration(snap.Interval) != time.Millisecond || snap.Source != "sample" {
		t.Errorf("samples %d interval %v source %q", snap.Samples, snap.Interval, snap.Source)
	}
	p := snap.Processes[0]
	if p.Pid != 41872 || p.PPid != 3312 || !strings.HasSuffix(p.Exe, "/MacOS/Python") || len(p.Modules) != 11 {
		t.Errorf("pid %d ppid %d exe %q modules %d", p.Pid, p.PPid, p.Exe, len(p.Modules))
	}
	if len(p.Threads) != 4 {
		t.Fatalf("%d threads", len(p.Threads))
	}
	main := p.Threads[0]
	leaf := main.Stack[0]
	if main.Tid != 5678418 || main.Name != "com.apple.main-thread" || main.State != "" {
		t.Errorf("main %d %q %q", main.Tid, main.Name, main.State)
	}
	// the loop was sampled at two addresses: one function in every sample
	if !strings.HasPrefix(leaf.Func, "mlx::core::metal::Fence::wait(") || leaf.Samples != 2613 || leaf.PC != 0x105a3e0fc ||
		leaf.File != "fence.cpp" || leaf.Line != 112 || !strings.HasSuffix(leaf.Module, "/mlx/lib/libmlx.dylib") {
		t.Errorf("leaf %+v", leaf)
	}
	if len(main.Notes) != 0 {
		t.Errorf("main notes %q: the leaf holds every sample", main.Notes)
	}
	last := main.Stack[len(main.Stack)-1]
	if last.Func != "start" || last.Module != "/usr/lib/dyld" || main.Stack[1].Module == "" {
		t.Errorf("outermost %+v", last)
	}
	// "Python" names the executable and the framework: left unresolved
	if f := main.Stack[3]; f.Func != "cfunction_vectorcall_FASTCALL_KEYWORDS" || f.Module != "Python" {
		t.Errorf("#3 %+v", f)
	}
	sched := p.Threads[1]
	if got := funcs(sched.Stack)[:3]; !reflect.DeepEqual(got, []string{"__psynch_cvwait", "_pthread_cond_wait", "std::__1::condition_variable::wait(std::__1::unique_lock<std::__1::mutex>&)"}) {
		t.Errorf("scheduler %q", got)
	}
	if sched.Stack[0].Samples != 2561 || sched.Stack[3].Samples != 2613 ||
		!reflect.DeepEqual(sched.Notes, []string{"stack is the call tree's heaviest path: 2561 of 2613 samples"}) {
		t.Errorf("scheduler samples %d/%d notes %q", sched.Stack[0].Samples, sched.Stack[3].Samples, sched.Notes)
	}
	if w := p.Threads[3]; w.Name != "com.Metal.CompletionQueueDispatch" || w.Stack[0].Func != "__workq_kernreturn" {
		t.Errorf("metal thread %+v", w)
	}
}

func TestParseSamplePasted(t *testing.T) {
	snap, skipped := parseStoredDump(t, "sample", "pasted_flattened.md", ParseSample)
	checkSkipped(t, skipped, "line 1 skipped: not a sample report", "line 82 skipped: not a sample report")
	p := snap.Processes[0]
	if len(p.Threads) != 5 {
		t.Fatalf("%d threads", len(p.Threads))
	}
	dog := p.Threads[4]
	want := []string{"__psynch_mutexwait", "_pthread_mutex_firstfit_lock_slow", "pthread_mutex_lock", "take_lock", "dog_fetch",
		"dog_dig", "dog_sniff", "dog_wander", "dog_worker", "_pthread_start", "thread_start"}
	if dog.Name != "dog" || !reflect.DeepEqual(funcs(dog.Stack), want) {
		t.Errorf("dog %q %q", dog.Name, funcs(dog.Stack))
	}
	if len(dog.Notes) != 1 || !strings.Contains(dog.Notes[0], "without its indentation") {
		t.Errorf("dog notes %q", dog.Notes)
	}
	if f := p.Threads[0].Stack[2]; f.Func != "main" || f.File != "mutex_o2.c" || f.Line != 141 || f.Module != "/Users/ana/hangdoc/testdata/patients/mutex_o2" {
		t.Errorf("main frame %+v", f)
	}

	snap, skipped = parseStoredDump(t, "sample", "pasted_quoted_cut.md", ParseSample)
	if len(skipped) != 2 || len(snap.Processes[0].Threads) != 2 {
		t.Fatalf("skipped %v threads %d", skipped, len(snap.Processes[0].Threads))
	}
	sched := snap.Processes[0].Threads[1]
	if sched.Stack[0].Func != "_pthread_cond_wait" || len(sched.Notes) != 2 || !strings.Contains(sched.Notes[0], "cut") {
		t.Errorf("cut thread %+v notes %q", sched.Stack[0], sched.Notes)
	}
}

func TestParseSpindumpTurnstile(t *testing.T) {
	snap, skipped := parseStoredDump(t, "spindump", "mutex_o2_heavy.txt", ParseSpindump)
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	if snap.Samples != 1000 || time.Duration(snap.Interval) != 10*time.Millisecond {
		t.Errorf("samples %d interval %v", snap.Samples, snap.Interval)
	}
	p := snap.Processes[0]
	if p.Pid != 8123 || p.PPid != 3312 || len(p.Threads) != 5 || len(p.Modules) != 6 {
		t.Fatalf("pid %d ppid %d threads %d modules %d", p.Pid, p.PPid, len(p.Threads), len(p.Modules))
	}
	main := p.Threads[0]
	if main.Tid != 0x5a1ae || main.State != "S" || main.Wait == nil || main.Wait.BlockedByTid != 0x5a1b2 || main.Wait.BlockedByPid != 8123 ||
		main.Wait.Nr != -1 || main.Wait.Wchan != "" {
		t.Errorf("main %+v wait %+v", main, main.Wait)
	}
	if got := funcs(main.Stack); !reflect.DeepEqual(got, []string{"__ulock_wait", "_pthread_join", "main", "start"}) {
		t.Errorf("main %q: kernel frames are not in the stack", got)
	}
	for _, w := range p.Threads[1:] {
		if w.Wait == nil || w.Wait.BlockedByTid != main.Tid || w.Wait.Wchan != "psynch_mtxcontinue" || w.Stack[0].Func != "__psynch_mutexwait" {
			t.Errorf("%s: wait %+v stack %q", w.Name, w.Wait, funcs(w.Stack))
		}
	}
	if f := p.Threads[4].Stack[3]; f.Func != "take_lock" || f.Offset != 14744 || f.PC != 0x102a5f998 || f.Module != "/Users/ana/hangdoc/testdata/patients/mutex_o2" {
		t.Errorf("dog #3 %+v", f)
	}
}

func TestParseSpindumpTimelineSpin(t *testing.T) {
	snap, skipped := parseStoredDump(t, "spindump", "mlx_fence_timeline.txt", ParseSpindump)
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	main, sched := p.Threads[0], p.Threads[1]
	leaf := main.Stack[0]
	if !strings.HasPrefix(leaf.Func, "mlx::core::metal::Fence::wait(") || leaf.Samples != 1000 || leaf.File != "fence.cpp" {
		t.Errorf("leaf %+v: the runs at three addresses are one function in all 1000 samples", leaf)
	}
	if main.CPU < 99.6 || main.CPU > 99.7 || main.State != "" {
		t.Errorf("main cpu %.2f state %q (9.964 s over 1000 samples of 10 ms)", main.CPU, main.State)
	}
	if f := main.Stack[1]; f.File != "transforms.cpp" || f.Line != 231 || f.Offset != 1556952 {
		t.Errorf("#1 %+v", f)
	}
	if sched.Wait == nil || sched.Wait.BlockedByTid != main.Tid || sched.Stack[0].Samples != 970 || sched.State != "S" {
		t.Errorf("scheduler wait %+v #0 %+v", sched.Wait, sched.Stack[0])
	}
}

func TestParseSpindumpSelf(t *testing.T) {
	snap, _ := parseStoredDump(t, "spindump", "sigrelock_self.txt", ParseSpindump)
	logger := snap.Processes[0].Threads[1]
	if logger.Name != "logger" || logger.Wait == nil || logger.Wait.BlockedByTid != logger.Tid || logger.Wait.BlockedByPid != 0 {
		t.Errorf("logger %q wait %+v: waiting for this thread", logger.Name, logger.Wait)
	}
	checkFuncs(t, "logger", logger.Stack, "__psynch_mutexwait", "_pthread_mutex_firstfit_lock_slow", "pthread_mutex_lock", "log_write", "on_sigusr1",
		"<signal handler called>", "write", "log_write", "logger_main", "_pthread_start", "thread_start")
}

func TestParseSpindumpPasted(t *testing.T) {
	snap, skipped := parseStoredDump(t, "spindump", "pasted_heaviest_only.md", ParseSpindump)
	if len(skipped) != 1 || len(snap.Processes) != 1 {
		t.Fatalf("skipped %v processes %d", skipped, len(snap.Processes))
	}
	th := snap.Processes[0].Threads[0]
	if got := funcs(th.Stack); !reflect.DeepEqual(got, []string{"__ulock_wait", "_pthread_join", "main", "start"}) || th.Wait.BlockedByTid != 0x5a1b2 {
		t.Errorf("heaviest %q wait %+v", got, th.Wait)
	}

	snap, skipped = parseStoredDump(t, "spindump", "pasted_quoted.md", ParseSpindump)
	checkSkipped(t, skipped, "lines 1–3 skipped: not a spindump report", "lines 45–46 skipped: not a spindump report")
	bee := snap.Processes[0].Threads[2]
	if bee.Name != "bee" || bee.Stack[0].Func != "bee_hover" || len(bee.Notes) != 1 {
		t.Errorf("bee %q %q %q", bee.Name, funcs(bee.Stack), bee.Notes)
	}
}

func TestParseMacFrames(t *testing.T) {
	sample := []struct {
		in   string
		want Frame
		cut  bool
	}{
		{"start  (in dyld) + 1903  [0x1a2b3c]", Frame{Func: "start", Module: "dyld", PC: 0x1a2b3c}, false},
		{"waitForReady(int (*) [2])  (in testDemo) + 162  [0x100000d22]  main.cpp:182",
			Frame{Func: "waitForReady(int (*) [2])", Module: "testDemo", PC: 0x100000d22, File: "main.cpp", Line: 182}, false},
		{"???  (in libfoo.dylib)  load address 0x100000000 + 0x3f80  [0x100003f80]", Frame{Module: "libfoo.dylib", Offset: 0x3f80, PC: 0x100003f80}, false},
		{"???  (in <unknown binary>)  [0x1234]", Frame{PC: 0x1234}, false},
		{"_sigtramp  (in libsystem_platform.dylib) + 29  [0x7fff]", Frame{Func: "_sigtramp", Module: "libsystem_platform.dylib", PC: 0x7fff, Signal: true}, false},
		{"foo  (in libbar", Frame{Func: "foo", Module: "libbar"}, true},
	}
	for _, tt := range sample {
		n := parseSampleFrame(tt.in)
		if !reflect.DeepEqual(n.f, tt.want) || n.cut != tt.cut {
			t.Errorf("sample %q\n got %+v cut %v\nwant %+v cut %v", tt.in, n.f, n.cut, tt.want, tt.cut)
		}
	}
	spin := []struct {
		in   string
		want Frame
		note string
		cut  bool
	}{
		{"start + 462 (dyld + 21806) [0x115b4652e] 1-49", Frame{Func: "start", Module: "dyld", Offset: 21806, PC: 0x115b4652e}, "", false},
		{"static RedLemonApp.$main() + 35 (RedLemonApp.swift:31,1 in RedLemon + 17460019) [0x10772db33]",
			Frame{Func: "static RedLemonApp.$main()", Module: "RedLemon", Offset: 17460019, PC: 0x10772db33, File: "RedLemonApp.swift", Line: 31}, "", false},
		{"CA::Transaction::run_commit_handlers(CATransactionPhase) + 98 (QuartzCore + 15338) [0x7ff80b8cfbea]",
			Frame{Func: "CA::Transaction::run_commit_handlers(CATransactionPhase)", Module: "QuartzCore", Offset: 15338, PC: 0x7ff80b8cfbea}, "", false},
		{"??? (<84FA5857-FE25-36F6-ACB0-828CE29EC10F> + 4970440) [0xfffffff0081f57c8] (blocked by turnstile waiting for NNIM [3715] thread 0xf1aeb)",
			Frame{Offset: 4970440, PC: 0xfffffff0081f57c8}, "blocked by turnstile waiting for NNIM [3715] thread 0xf1aeb", false},
		{"thread_continue + 67 (kernel + 1001955) [0xffffff80002f49e3] (running)", Frame{Func: "thread_continue", Module: "kernel", Offset: 1001955, PC: 0xffffff80002f49e3}, "running", false},
		{"start_wqthread + 15 (libsystem_pthread.dylib)", Frame{Func: "start_wqthread", Module: "libsystem_pthread.dylib"}, "", false},
		{"bee_hover + 28 (mutex_o2 + 14684) [0", Frame{Func: "bee_hover", Module: "mutex_o2", Offset: 14684}, "", true},
		{"bee_hover + 28 (mutex_o", Frame{Func: "bee_hover"}, "", true},
	}
	for _, tt := range spin {
		n := parseSpindumpFrame(tt.in)
		if !reflect.DeepEqual(n.f, tt.want) || n.note != tt.note || n.cut != tt.cut {
			t.Errorf("spindump %q\n got %+v %q cut %v\nwant %+v %q cut %v", tt.in, n.f, n.note, n.cut, tt.want, tt.note, tt.cut)
		}
	}
}

// The heaviest path stops where more samples ended in a frame than went
// into any one of its callees.
func TestParseSampleSelfTime(t *testing.T) {
	in := `Call graph:
    100 Thread_1
      100 main  (in a) + 1  [0x1]
        60 work  (in a) + 1  [0x2]
          30 leaf1  (in a) + 1  [0x3]
          20 leaf2  (in a) + 1  [0x4]
        40 other  (in a) + 1  [0x5]
`
	snap, _, err := ParseSample(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	th := snap.Processes[0].Threads[0]
	if got := funcs(th.Stack); !reflect.DeepEqual(got, []string{"leaf1", "work", "main"}) {
		t.Errorf("%q", got)
	}
	in = strings.Replace(in, "30 leaf1", "12 leaf1", 1)
	snap, _, _ = ParseSample(strings.NewReader(in))
	if got := funcs(snap.Processes[0].Threads[0].Stack); !reflect.DeepEqual(got, []string{"work", "main"}) {
		t.Errorf("%q: 28 samples in work itself beat 20 in leaf2", got)
	}
}

func TestParseMacErrors(t *testing.T) {
	checkParseErrors(t, ParseSample, []errorCase{
		{"", "empty input: no sample report"},
		{"hello\n", `line 1: not a sample report: no call graph ("    2613 Thread_5678418 …" over "    + 2613 start  (in dyld) + 1903  [0x…]")`},
	})
	checkParseErrors(t, ParseSpindump, []errorCase{
		{"", "empty input: no spindump report"},
		{"Process: x [1]\nhello\n", `line 2: not a spindump report: no thread ("Thread 0x2c1a0e    1000 samples (1-1000) …") with frames ("1000  start + 1903 (dyld + 24800) [0x…]")`},
	})
	snap, _, err := ParseSpindump(&brokenReader{data: []byte("Thread 0x1    5 samples (1-5)\n5  f + 1 (a + 1) [0x1]\n")})
	if err == nil || snap == nil {
		t.Errorf("read error: snap %v err %v", snap, err)
	}
}

func FuzzParseSample(f *testing.F) {
	fuzzDumps(f, "sample", ParseSample, nil,
		"Call graph:\n1 Thread_1\n+ 2 a  (in b\n    ! 3 c\n1 d\n",
	)
}

func FuzzParseSpindump(f *testing.F) {
	fuzzDumps(f, "spindump", ParseSpindump, nil,
		"Heaviest stack for the main thread of the target process:\n *1 a (b) [0x1] (blocked by turnstile waiting for this thread)\nThread 0x1\n",
	)
}

func TestParseMacLinearTime(t *testing.T) {
	var deep strings.Builder
	deep.WriteString("Call graph:\n    1 Thread_1\n")
	for i := 0; i < 3000; i++ {
		deep.WriteString(strings.Repeat(" ", 6+2*i) + "1 f  (in a) + 1  [0x1]\n")
	}
	sample := map[string]string{
		"siblings":    "Call graph:\n    9 Thread_1\n" + strings.Repeat("      1 f  (in a) + 1  [0x1]\n      1 g  (in a) + 1  [0x2]\n", 40000),
		"distinct":    "Call graph:\n    9 Thread_1\n" + strings.Repeat("      1 f  (in a) + 1  [0x1]\n        1 g  (in b) + 2  [0x3]\n", 40000),
		"flat":        "Call graph:\n1 Thread_1\n" + strings.Repeat("1 f  (in a) + 1  [0x1]\n", 60000),
		"deep":        deep.String(),
		"threads":     "Call graph:\n" + strings.Repeat("    1 Thread_1\n      1 f  (in a) + 1  [0x1]\n", 40000),
		"in":          "Call graph:\n    1 Thread_1\n      1 " + strings.Repeat("(in ", 40000) + "\n",
		"prose":       strings.Repeat("zz\n\n", 40000),
		"list":        "Sort by top of stack, same collapsed (when >= 5):\n" + strings.Repeat("        f  (in a)        5\n", 60000),
		"image lines": "Binary Images:\n" + strings.Repeat("0x1 - 0x2 a <0A1B2C3D-4E5F> /x\n", 60000),
	}
	checkDumpLinear(t, ParseSample, sample, map[string]bool{"siblings": true, "flat": true, "deep": true, "prose": false}, linearBound)
	spin := map[string]string{
		"timeline":  "Thread 0x1    9 samples (1-9)\n" + strings.Repeat("  1  f + 1 (a + 1) [0x1] 1\n  1  g + 1 (a + 2) [0x2] 2\n", 40000),
		"distinct":  "Thread 0x1    9 samples (1-9)\n" + strings.Repeat("  1  f + 1 (a + 1) [0x1] 1\n    1  g + 1 (a + 2) [0x9] 2\n", 40000),
		"kernel":    "Thread 0x1    9 samples (1-9)\n" + strings.Repeat(" *1  f + 1 (kernel + 1) [0x1] (blocked by turnstile waiting for x [1] thread 0x2)\n", 40000),
		"heaviest":  "Heaviest stack for the main thread of the target process:\n" + strings.Repeat("  1  f + 1 (a + 1) [0x1]\n", 60000),
		"parens":    "Thread 0x1    9 samples (1-9)\n  1  f " + strings.Repeat("(", 60000) + " [0x1]\n",
		"processes": strings.Repeat("Process: x [1]\nThread 0x1    9 samples (1-9)\n  1  f + 1 (a + 1) [0x1]\n", 25000),
	}
	checkDumpLinear(t, ParseSpindump, spin, map[string]bool{"timeline": true, "heaviest": true, "processes": true}, linearBound)
}

// Hand-written: a spindump paste that starts mid-tree (the first thread's
// header cut) is still that thread's stack, and a turnstile owner printed
// with "[unique pid N]" (newer spindumps) is still read.
func TestSpindumpHeadlessUniquePid(t *testing.T) {
	in := `        1000  db_commit + 40 (store + 14764) [0x1029f79ac]
          1000  __psynch_mutexwait + 8 (libsystem_kernel.dylib + 20908) [0x18fa0d1ac]
           *1000  psynch_mtxcontinue + 0 (pthread + 18136) [0xfffffe000a8b46d8] (blocked by turnstile waiting for store [812] [unique pid 4410] thread 0x1f02)

  Thread 0x1f02    Thread name "flusher"    1000 samples (1-1000)    priority 31 (base 31)
  1000  thread_start + 8 (libsystem_pthread.dylib + 7456) [0x18fa4ad3c]
`
	snap, _, err := ParseSpindump(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	ths := snap.Processes[0].Threads
	if len(ths) != 2 {
		t.Fatalf("%d threads, want the headless waiter and flusher", len(ths))
	}
	w := ths[0]
	if got := funcs(w.Stack); !reflect.DeepEqual(got, []string{"__psynch_mutexwait", "db_commit"}) || w.Wait == nil || w.Wait.BlockedByTid != 0x1f02 || w.Wait.BlockedByPid != 812 {
		t.Errorf("headless waiter: stack %v, wait %+v", got, w.Wait)
	}
}
