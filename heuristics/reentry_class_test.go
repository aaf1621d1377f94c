package heuristics

// Class rules of re-entry and loader hangs on stacks built here
// (hand-written frames: the shape of each class with names of other
// libraries than the corpus report it was found on), and where each rule
// must stay silent.

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// pyStack is a thread of Python frames only, innermost first, as a
// traceback or faulthandler prints them: "func file.py:line".
func pyStack(frames ...stacks.Frame) *stacks.Thread {
	t := &stacks.Thread{State: "S", Stack: frames}
	t.SetSamples([]stacks.Sample{{State: "S", Stack: frames}})
	return t
}

func pyf(fn, file string, line int) stacks.Frame {
	return stacks.Frame{Func: fn, File: file, Line: line}
}

// top is the first diagnosis Diagnose gives, "" for none.
func top(snap *stacks.Snapshot) (Diagnosis, bool) {
	ds := Diagnose(snap, Options{}).Diagnoses
	if len(ds) == 0 {
		return Diagnosis{}, false
	}
	return ds[0], true
}

// A traceback whose innermost frame takes a lock (the format shows no C
// frames under it) while a frame further out of the same module gives
// that lock back: the release ran code (a weakref callback, a __del__)
// that asks for the same lock before the release was done.
func TestPyAcquireInsideItsRelease(t *testing.T) {
	snap := pasted(proc(0, pyStack(
		pyf("_lock_registry", "/app/registry.py", 40),
		pyf("_on_collected", "/app/registry.py", 88),
		pyf("__exit__", "/usr/lib/python3.11/threading.py", 270),
		pyf("_unlock_registry", "/app/registry.py", 47),
		pyf("main", "/app/main.py", 3),
	)))
	d, ok := top(snap)
	if !ok || d.ID != "self-deadlock" {
		t.Fatalf("top verdict %s %s, want self-deadlock", d.ID, d.Summary)
	}
	has(t, "chain", d.Chain[1], "_unlock_registry", "gives that lock back", "_on_collected")
	if d.Confidence != Medium {
		t.Errorf("confidence %s, want medium", d.Confidence)
	}
	// the same module's lock taken again elsewhere, not inside its release: no re-entry shown
	other := pasted(proc(0, pyStack(
		pyf("_lock_registry", "/app/registry.py", 40),
		pyf("_on_collected", "/app/registry.py", 88),
		pyf("_save_registry", "/app/registry.py", 60),
		pyf("main", "/app/main.py", 3),
	)))
	if d, ok := top(other); ok && d.ID == "self-deadlock" && d.Confidence == Medium {
		t.Errorf("no release on the stack, yet a medium self-deadlock: %s", d.Summary)
	}
	// threading's own waits named for their lock are no acquire: a join, a condition's wait
	for _, fn := range []string{"_wait_for_tstate_lock", "_acquire_restore"} {
		if c, _ := waitOf(pyStack(pyf(fn, "/usr/lib/python3.11/threading.py", 1116), pyf("main", "/app/main.py", 3))); c == waitPyLock {
			t.Errorf("%s read as a lock acquire", fn)
		}
	}
	// a traceback whose innermost frame takes nothing is no lock wait
	none(t, "self-deadlock", pasted(proc(0, pyStack(
		pyf("read_chunk", "/app/io.py", 12),
		pyf("_unlock_registry", "/app/registry.py", 47),
	))))
}

// A thread waiting for a lock inside a shared object's constructors,
// which ld.so's call_init runs (a paste without modules names it only
// by its callee), is inside the loader: dlopen holds the loader lock
// while constructors run, the lock's holder most likely waits for it.
// The program's own constructors, run by libc at start-up, are not.
func TestConstructorUnderCallInit(t *testing.T) {
	ctor := func(below ...string) *stacks.Snapshot {
		fs := append([]string{"__lll_lock_wait", "pthread_mutex_lock", "Registry::add", "_GLOBAL__sub_I_plugin.cc"}, below...)
		return pasted(proc(0, thread(0, "", fs...)))
	}
	d, ok := top(ctor("call_init"))
	if !ok || d.ID != "loader-lock" || d.Confidence != Low {
		t.Fatalf("top verdict %s (%s) %s, want loader-lock, low", d.ID, d.Confidence, d.Summary)
	}
	has(t, "summary", d.Summary, "inside the dynamic loader", "call_init")
	if d, ok := top(ctor("__libc_csu_init", "__libc_start_main", "_start")); ok && d.ID == "loader-lock" {
		t.Errorf("the program's own start-up constructors: %s", d.Summary)
	}
	// through the object's _init, called by a frame without a symbol (ld.so's, often): dlopen's
	if d, ok := top(ctor("__do_global_ctors_aux", "_init", "??")); !ok || d.ID != "loader-lock" {
		t.Errorf("constructors under _init and ??: top verdict %s %s, want loader-lock", d.ID, d.Summary)
	}
	// ld.so running a library's constructors before main holds no lock another thread could want
	if d, ok := top(ctor("call_init", "_dl_init", "_dl_start_user")); ok && d.ID == "loader-lock" {
		t.Errorf("constructors at start-up: %s", d.Summary)
	}
	// a paste that ends in the constructors says nothing of who called them
	if d, ok := top(ctor()); ok && d.ID == "loader-lock" {
		t.Errorf("constructors at the cut: %s", d.Summary)
	}
	// call_init that runs no constructor is any program's function
	if d, ok := top(pasted(proc(0, thread(0, "", "__lll_lock_wait", "pthread_mutex_lock", "Registry::add", "call_init", "main")))); ok && d.ID == "loader-lock" {
		t.Errorf("an application's call_init: %s", d.Summary)
	}
}

// A spin lock whose slow path yields the CPU (NetBSD's thr_yield,
// sched_yield) caught in one sample waits for the lock; when the lock
// guards the allocator's initialisation, the lone waiter most likely
// re-entered that initialisation: a self-deadlock, not a forked child.
func TestAllocatorInitLockYieldingSpin(t *testing.T) {
	spin := func(lock string) *stacks.Snapshot {
		th := thread(0, "", "__libc_thr_yield@plt", "base::internal::SpinLockDelay", "SpinLock::SlowLock", "SpinLock::Lock",
			"tcmalloc::ThreadCache::CreateCacheIfNecessary", "tcmalloc::ThreadCache::GetCache", "tc_malloc", "strdup", "main")
		th.Stack[2].Args = []stacks.Arg{stacks.NewArg("this", "0x7f0000001000 <"+lock+">")}
		return pasted(proc(0, th))
	}
	d, ok := top(spin("tcmalloc::Static::cache_init_lock_"))
	if !ok || d.ID != "self-deadlock" {
		t.Fatalf("init lock: top verdict %s %s, want self-deadlock", d.ID, d.Summary)
	}
	has(t, "summary", d.Summary, "initialisation lock")
	// another allocator lock: a lone waiter on it is most likely a forked child (the allocator rule)
	d, ok = top(spin("tcmalloc::Static::pageheap_lock_"))
	if !ok || d.ID != "fork-inherited-lock" {
		t.Fatalf("page heap lock: top verdict %s %s, want fork-inherited-lock", d.ID, d.Summary)
	}
	// a yield called by the program's own loop is no lock wait
	if d, ok := top(pasted(proc(0, thread(0, "", "sched_yield", "poll_queue", "worker", "start_thread")))); ok && d.Deadlock {
		t.Errorf("a yielding loop: %s %s", d.ID, d.Summary)
	}
}

func TestInitWord(t *testing.T) {
	for name, want := range map[string]bool{
		"tcmalloc::(anonymous namespace)::init_cache_lock": true,
		"init_lock":                        true,
		"TCMalloc_ThreadCache::InitModule": true,
		"malloc_init_hard":                 true,
		"initial_arena":                    false,
		"uninit_lock":                      false,
		"Initial":                          false,
		"pageheap_lock_":                   false,
	} {
		if got := initWord(name); got != want {
			t.Errorf("initWord(%q) = %v, want %v", name, got, want)
		}
	}
}

// A signal handler known by its signature alone (the signal number
// first, the siginfo and the context after it: any name), where the
// paste ends: a lone wait for malloc's lock under it is the handler's
// re-entry, hedged, not a forked child's wait. Arguments of another
// shape, or a thread start below, say no handler.
func TestHandlerBySignatureAtTheCut(t *testing.T) {
	waiter := func(handler string, args []stacks.Arg, below ...string) *stacks.Snapshot {
		fs := append([]string{"__lll_lock_wait_private", "_int_malloc", "malloc", "strdup", "format_report", handler}, below...)
		th := thread(0, "", fs...)
		th.Stack[5].Args = args
		return pasted(proc(0, th))
	}
	sigaction := []stacks.Arg{stacks.NewArg("signo", "11"), stacks.NewArg("siginfo", "0x7ffc1"), stacks.NewArg("uctx", "0x7ffc2")}
	d, ok := top(waiter("on_fault", sigaction))
	if !ok || d.ID != "signal-handler-reentry" || d.Confidence != Low {
		t.Fatalf("top verdict %s (%s) %s, want signal-handler-reentry, low", d.ID, d.Confidence, d.Summary)
	}
	has(t, "summary", d.Summary, "inside signal handler `on_fault`", "interrupted frames are not in the paste")
	if d, ok := top(waiter("on_fault", []stacks.Arg{stacks.NewArg("sig", "6")})); !ok || d.ID != "signal-handler-reentry" {
		t.Errorf("sa_handler's one argument: top verdict %s %s", d.ID, d.Summary)
	}
	// not a handler's arguments: the allocator rule's forked child
	if d, ok := top(waiter("on_fault", []stacks.Arg{stacks.NewArg("sig", "11"), stacks.NewArg("count", "2")})); !ok || d.ID != "fork-inherited-lock" {
		t.Errorf("two arguments: top verdict %s %s, want fork-inherited-lock", d.ID, d.Summary)
	}
	// a function a signal-handling thread runs from its start is no handler
	if d, ok := top(waiter("on_fault", sigaction, "start_thread", "clone")); ok && d.ID == "signal-handler-reentry" {
		t.Errorf("a thread's own function: %s", d.Summary)
	}
}

func TestHandlerSignature(t *testing.T) {
	for _, c := range []struct {
		args []stacks.Arg
		want bool
	}{
		{[]stacks.Arg{stacks.NewArg("sig", "38"), stacks.NewArg("siginfo", "0x1"), stacks.NewArg("context", "0x2")}, true},
		{[]stacks.Arg{stacks.NewArg("signum", "11")}, true},
		{[]stacks.Arg{stacks.NewArg("sig", "6"), stacks.NewArg("sig_info", "<optimized out>"), stacks.NewArg("context", "<optimized out>")}, true},
		{[]stacks.Arg{stacks.NewArg("sig", "0x7f00")}, false},
		{[]stacks.Arg{stacks.NewArg("signal", "15")}, false},
		{[]stacks.Arg{stacks.NewArg("sig", "11"), stacks.NewArg("mask", "0x1"), stacks.NewArg("flags", "0")}, false},
		{nil, false},
	} {
		if got := handlerSignature(stacks.Frame{Func: "f", Args: c.args}); got != c.want {
			t.Errorf("handlerSignature(%v) = %v, want %v", c.args, got, c.want)
		}
	}
}

// Two threads whose pasted stacks end above their waits: one in the
// allocator called from inside dlclose, one in the loader called from
// inside the allocator (a stack trace taken in malloc). The loader lock
// and the allocator's are taken in opposite orders: a loader-lock cycle,
// hedged. Either thread alone, or both calls in the same order, is none.
func TestLoaderAllocatorInversionAboveTheCut(t *testing.T) {
	inLoader := func() *stacks.Thread {
		return thread(0, "", "je_arena_dalloc_large", "free", "_dl_close_worker", "_dl_close", "dlclose", "plugin_unload", "main")
	}
	inAlloc := func() *stacks.Thread {
		return thread(0, "", "dl_iterate_phdr", "_Unwind_Backtrace", "backtrace", "je_prof_backtrace", "je_malloc", "worker", "start_thread")
	}
	d, ok := top(pasted(proc(0, inLoader(), inAlloc())))
	if !ok || d.ID != "loader-lock" || d.Confidence != Low {
		t.Fatalf("top verdict %s (%s) %s, want loader-lock, low", d.ID, d.Confidence, d.Summary)
	}
	has(t, "summary", d.Summary, "je_arena_dalloc_large", "dlclose", "dl_iterate_phdr", "opposite orders")
	if d, ok := top(pasted(proc(0, inLoader()))); ok && d.ID == "loader-lock" {
		t.Errorf("one side alone: %s", d.Summary)
	}
	// both threads inside the loader calling the allocator: the same order, no cycle
	if d, ok := top(pasted(proc(0, inLoader(), inLoader()))); ok && d.ID == "loader-lock" {
		t.Errorf("the same order twice: %s", d.Summary)
	}
}

// A gdb paste that starts at frame #3 (the lock wait left out) inside
// the allocator, whose stack shows the allocator entered again from its
// own call-out (a profiling hook here): the allocator re-entered itself,
// a self-deadlock, low. The same fragment with the allocator once is no
// verdict of it: its wait is not in the dump.
func TestCutAllocatorReentry(t *testing.T) {
	paste := func(frames string) *stacks.Snapshot {
		snap, _, _, err := stacks.Parse(strings.NewReader(frames), "")
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	twice := `#3  0x00007f10 in je_arena_tcache_fill_small (arena=0x7f20) at src/arena.c:1475
#4  0x00007f11 in je_tcache_alloc_small_hard (tcache=0x7f30) at src/tcache.c:72
#5  0x00007f12 in record_sample (size=64) at profiler.c:40
#6  0x00007f13 in prof_hook (ptr=0x7f40) at profiler.c:88
#7  0x00007f14 in je_arena_malloc_hard (arena=0x7f20) at src/arena.c:1600
#8  0x00007f15 in je_malloc (size=64) at src/jemalloc.c:900
#9  0x00007f16 in parse_config (path=0x4000) at main.c:12
#10 0x00007f17 in main (argc=1, argv=0x7ffc) at main.c:30
`
	d, ok := top(paste(twice))
	if !ok || d.ID != "self-deadlock" || d.Confidence != Low {
		t.Fatalf("top verdict %s (%s) %s, want self-deadlock, low", d.ID, d.Confidence, d.Summary)
	}
	has(t, "summary", d.Summary, "allocator is on the stack twice", "record_sample", "left out the innermost frames")
	once := `#3  0x00007f10 in je_arena_tcache_fill_small (arena=0x7f20) at src/arena.c:1475
#4  0x00007f11 in je_tcache_alloc_small_hard (tcache=0x7f30) at src/tcache.c:72
#5  0x00007f15 in je_malloc (size=64) at src/jemalloc.c:900
#6  0x00007f16 in parse_config (path=0x4000) at main.c:12
#7  0x00007f17 in main (argc=1, argv=0x7ffc) at main.c:30
`
	if d, ok := top(paste(once)); ok && d.Deadlock {
		t.Errorf("the allocator once, its wait cut: %s %s", d.ID, d.Summary)
	}
}
