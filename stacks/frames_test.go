package stacks

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFramesGoldens(t *testing.T) { checkDumpGoldens(t, "frames", ParseFrames, 0) }

// TestFramesTree: a tree drawn by hand, innermost call on top, is one
// thread per block; DDT's CSV tree gives one thread per leaf, innermost
// first.
func TestFramesTree(t *testing.T) {
	snap, _ := parseStoredDump(t, "frames", "clickhouse_tree.txt", ParseFrames)
	if n := len(snap.Processes[0].Threads); n != 2 {
		t.Fatalf("%d threads", n)
	}
	checkFuncs(t, "first", snap.Processes[0].Threads[0].Stack, "runtime_SemacquireMutex", "main.(*Clickhouse).GetNextServer", "main.(*FileDumper).ProcessNextDump")
	snap, _ = parseStoredDump(t, "frames", "ddt_merged_csv.txt", ParseFrames)
	th := snap.Processes[0].Threads[0]
	if th.Stack[0].Func != "mca_btl_sm_check_fboxes" || th.Stack[len(th.Stack)-1].Func != "main" || th.Name != "1 processes" {
		t.Errorf("first DDT leaf: %q %q", th.Name, funcs(th.Stack))
	}
}

func FuzzParseFrames(f *testing.F) {
	fuzzDumps(f, "frames", ParseFrames, nil, "a\n └─ b\n", "1,1,main (a.c:1)\n1,1,  f\n")
}

// TestFramesCallTree: a call tree drawn by hand, outermost call first
// and a callee indented under its caller (RTKLIB#170), is the stack of
// its last line, innermost first; the calls that had returned (the first
// lock) and the reader's words after a frame's file:line are notes.
func TestFramesCallTree(t *testing.T) {
	snap, _ := parseStoredDump(t, "frames", "rtklib_call_tree.txt", ParseFrames)
	th := snap.Processes[0].Threads[0]
	if got := funcs(th.Stack); !reflect.DeepEqual(got, []string{"lock", "trace", "reppath", "traceswap", "trace"}) {
		t.Errorf("stack %q", got)
	}
	if f := th.Stack[0]; f.File != "rtkcmn.c" || f.Line != 2772 {
		t.Errorf("frame 0 %+v", f)
	}
	n := strings.Join(th.Notes, "|")
	for _, want := range []string{"line 3: lock, called by traceswap before reppath, had returned", `"first lock"`, `"second lock and thread blocks forever"`} {
		if !strings.Contains(n, want) {
			t.Errorf("notes %q lack %q", th.Notes, want)
		}
	}
}

// TestFramesReturnedCalls: the calls a call tree shows had returned are
// kept with their arguments and the index of their caller on the stack
// (RTKLIB#170: the first lock(&lock_trace), called by traceswap).
func TestFramesReturnedCalls(t *testing.T) {
	snap, _ := parseStoredDump(t, "frames", "rtklib_call_tree.txt", ParseFrames)
	th := snap.Processes[0].Threads[0]
	if len(th.Returned()) != 2 {
		t.Fatalf("returned %+v", th.Returned())
	}
	first := th.Returned()[0]
	if first.Func != "lock" || first.Line != 2772 || th.Stack[first.Caller].Func != "traceswap" || len(first.Args) != 1 || first.Args[0].Value != "&lock_trace" {
		t.Errorf("first returned call %+v (caller %q)", first, th.Stack[first.Caller].Func)
	}
	if r := th.Returned()[1]; r.Func != "traceswap" || th.Stack[r.Caller].Func != "trace" || r.Caller != 1 {
		t.Errorf("second returned call %+v", r)
	}
	if a := th.Stack[0].Args; len(a) != 1 || a[0].Value != "&lock_trace" {
		t.Errorf("innermost frame's args %+v", a)
	}
	if got := sourceCallArgs("f(a, g(b, c)), &x"); len(got) != 2 || got[0].Value != "f(a, g(b, c))" || got[1].Value != "&x" {
		t.Errorf("sourceCallArgs %+v", got)
	}
}

// TestFramesInfoLine: gdb's `info line *ADDR` answers pasted one a frame
// (jemalloc#2402's real paste) are frames, and the repair step does not
// join them as wrapped lines though they are 72-80 columns wide.
func TestFramesInfoLine(t *testing.T) {
	th := corpusFirstThread(t, "gdbinfoline-jemalloc-2402-fork-child-extent-split-lock")
	checkFuncs(t, "info line", th.Stack, "je_malloc_mutex_lock_slow", "extent_split_impl", "extent_split_interior", "extent_recycle",
		"je_extents_alloc", "je_arena_tcache_fill_small", "je_tcache_alloc_small_hard", "calloc")
	if f := th.Stack[2]; f.File != "src/extent.c" || f.Line != 972 || f.Offset != 0x4af8f {
		t.Errorf("frame 2 %+v", f)
	}
}

// TestFramesEmptyParams: a symbolizer's 'name() (file:line)' lines
// (llvm#137026's real paste) are frames named without the "()"; gdb's
// 'name (args) at file:line' keeps reading as before.
func TestFramesEmptyParams(t *testing.T) {
	th := corpusFirstThread(t, "frames-llvm-137026-lldb-dap-join-while-holding-api-mutex")
	checkFuncs(t, "empty params", th.Stack, "__futex_abstimed_wait_common64", "__futex_abstimed_wait_common",
		"__GI___futex_abstimed_wait_cancelable64", "__pthread_clockjoin_ex", "__gthread_join", "std::thread::join",
		"lldb_dap::DAP::StopEventHandlers")
	if f := th.Stack[5]; f.File != "/home/engshare/third-party2/libgcc/11.x/src/gcc-11.x/libstdc++-v3/src/c++11/thread.cc" || f.Line != 112 {
		t.Errorf("frame 5 %+v", f)
	}
	snap, _, _, err := Parse(bytes.NewReader([]byte("wait_for (q=0x1) at q.c:3\nrun () at q.c:9\nmain () at q.c:20\n")), "frames")
	if err != nil {
		t.Fatal(err)
	}
	if f := snap.Processes[0].Threads[0].Stack[0]; f.Func != "wait_for" || f.File != "q.c" || f.Line != 3 {
		t.Errorf("gdb form: %+v", f)
	}
}

// corpusFirstThread parses a corpus report's dump and returns its first
// process's first thread.
func corpusFirstThread(t *testing.T, name string) *Thread {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "corpus", name, "dump.txt"))
	if err != nil {
		t.Fatal(err)
	}
	snap, _, _, err := Parse(bytes.NewReader(b), "")
	if err != nil {
		t.Fatal(err)
	}
	return snap.Processes[0].Threads[0]
}
