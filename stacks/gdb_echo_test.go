package stacks

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// A gdb session that switches to a thread and selects a frame echoes
// that frame ("[Switching to thread 4 (…)]#2  0x… in pthread_mutex_lock
// ()" on one line in older gdb, then "#2 …" again after `frame 2`): the
// echo is frame 2 of a thread already read, not a thread of its own. The
// paste is the Wikibooks corpus report (a real gdb run, URL in its
// meta.json); it read as three threads, the third a headerless tid 0.
func TestGDBFrameEchoAfterSwitch(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "corpus", "gdb-wikibooks-deadlocks-thread1-thread2-two-mutexes-owner", "dump.txt"))
	if err != nil {
		t.Fatal(err)
	}
	snap, _, err := ParseGDB(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for _, p := range snap.Processes {
		for _, th := range p.Threads {
			tids = append(tids, th.Tid)
		}
	}
	sort.Ints(tids)
	if len(tids) != 2 || tids[0] != 12275 || tids[1] != 12276 {
		t.Errorf("threads %v, want [12275 12276]: the `frame 2` echo of thread 4 made a thread", tids)
	}
}

// Silent case (hand-written, two lines): a lone frame after a switch to
// a thread whose backtrace was not read is that thread's stack, kept.
func TestGDBFrameAfterSwitchUnreadThread(t *testing.T) {
	in := "[Switching to thread 3 (Thread 0x7f0000001000 (LWP 77))]#2  0x0000000000401000 in worker ()\n" +
		"#2  0x0000000000401000 in worker ()\n"
	snap, _, err := ParseGDB(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	th := snap.Processes[0].Threads
	if len(th) != 1 || th[0].Tid != 77 || len(th[0].Stack) != 1 || th[0].Stack[0].Func != "worker" {
		t.Errorf("threads %+v, want thread 77 with its one frame `worker`", th)
	}
}
