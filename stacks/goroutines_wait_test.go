package stacks

import (
	"fmt"
	"strings"
	"testing"
)

// Runtime.Object read from the patients' dumps: the mutex, RWMutex,
// WaitGroup or channel each blocked goroutine waits on, as the dump's
// arguments show it (checked by hand against each dump).
func TestGoroutineWaitObjects(t *testing.T) {
	tests := []struct {
		file string
		want map[int]string // goroutine id → object, kind
	}{
		{"abba_sigquit.txt", map[int]string{
			1:  "0xc67aad02030 waitgroup", // done.Wait: the receiver of Wait
			18: "0xc67aad16080 mutex",     // lockSlow's receiver: carol.mu
			19: "0xc67aad16060 mutex",     // alice.mu
			20: "0xc67aad36000 chan recv", // the ticker's channel (runtime.chanrecv)
			2:  "0x0 ",                    // the runtime's own
		}},
		// RLock was inlined and Lock's receiver printed "0x0?": both come
		// from semacquire1's semaphore (readerSem at +12, writerSem at +8)
		// and name the one RWMutex, the cache's first field.
		{"rlock_sigquit.txt", map[int]string{21: "0x127c11206080 rlock", 22: "0x127c11206080 wlock", 1: "0x0 select {}"}},
		{"go119_rlock_sigquit.txt", map[int]string{6: "0xc000058020 rlock", 7: "0xc000058020 wlock"}},
		{"chansend_sigquit.txt", map[int]string{3: "0x3c90283c80e0 chan send"}},
		// Go 1.19: Wait's receiver printed "0x4fbb78?"; semacquire1's
		// semaphore less 8.
		{"go119_abba_sigquit.txt", map[int]string{1: "0xc0000a2020 waitgroup", 18: "0xc0000b0020 mutex"}},
		{"waitgroup_sigquit.txt", map[int]string{1: "0xaae7fd1e0c0 waitgroup"}},
		// A panic's dump hides the runtime's frames: the test's channel
		// receive shows only in the status.
		{"gotest_timeout.txt", map[int]string{22: "0x87979202420 mutex", 21: "0x0 "}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			snap, _ := parseGoFile(t, tt.file)
			byID := map[int]*Thread{}
			for _, th := range snap.Processes[0].Threads {
				byID[th.Tid] = th
			}
			for id, want := range tt.want {
				th := byID[id]
				if th == nil {
					t.Fatalf("no goroutine %d", id)
				}
				got := fmt.Sprintf("%#x %s", th.Goroutine().Object, GoWaitOf(th.Stack).Kind)
				if got != want {
					t.Errorf("goroutine %d: object and kind %q, want %q", id, got, want)
				}
			}
		})
	}
}

func TestGoWaitOf(t *testing.T) {
	fr := func(names ...string) []Frame {
		var st []Frame
		for _, n := range names {
			st = append(st, Frame{Func: n})
		}
		return st
	}
	tests := []struct {
		stack         []Frame
		kind          string
		frame, caller int
	}{
		// A writer waiting for another writer waits on the RWMutex's w.
		{fr("runtime.gopark", "runtime.semacquire1", "internal/sync.runtime_SemacquireMutex", "internal/sync.(*Mutex).lockSlow",
			"internal/sync.(*Mutex).Lock", "sync.(*Mutex).Lock", "sync.(*RWMutex).Lock", "main.set", "main.main"), GoWaitWLock, 6, 7},
		{fr("runtime.gopark", "runtime.selectgo", "main.loop.func1", "runtime.goexit"), GoWaitSelect, 1, 2},
		{fr("runtime.gopark", "runtime.netpollblock", "internal/poll.runtime_pollWait", "internal/poll.(*pollDesc).wait",
			"internal/poll.(*FD).Accept", "net.(*netFD).accept"), GoWaitIO, 2, 5},
		{fr("runtime.gopark", "runtime.gcBgMarkWorker", "runtime.goexit"), "", -1, 3},
		{fr("main.compute", "main.main"), "", -1, 2},
		{nil, "", -1, 0},
	}
	for _, tt := range tests {
		w := GoWaitOf(tt.stack)
		if w.Kind != tt.kind || w.Frame != tt.frame || w.Caller != tt.caller {
			t.Errorf("%v: got %+v, want %q at %d, caller %d", funcs(tt.stack), w, tt.kind, tt.frame, tt.caller)
		}
	}
}

// GroupThreads buckets goroutines as panicparse does with "any pointer":
// the same functions at the same lines, whatever the arguments; a
// different function or line anywhere on the stack is another group.
func TestGroupGoroutinesAnyPointer(t *testing.T) {
	dump := `goroutine 7 [chan receive]:
main.worker(0xc000010000, 0x1)
	/src/main.go:10 +0x1
created by main.main in goroutine 1
	/src/main.go:20 +0x2

goroutine 8 [chan receive]:
main.worker(0xc000020000, 0x2)
	/src/main.go:10 +0x1
created by main.main in goroutine 1
	/src/main.go:20 +0x2

goroutine 9 [chan receive]:
main.other(0xc000010000, 0x1)
	/src/main.go:30 +0x1
created by main.main in goroutine 1
	/src/main.go:21 +0x2

goroutine 10 [chan receive]:
main.worker(0xc000010000, 0x1)
	/src/main.go:12 +0x1
created by main.main in goroutine 1
	/src/main.go:20 +0x2
`
	snap, _, err := ParseGoroutines(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	groups := GroupThreads(snap.Processes[0].Threads)
	// goroutine 10 waits at another line of the same function: its own group.
	if len(groups) != 3 || len(groups[0].Threads) != 2 || groups[0].Threads[0].Tid != 7 || groups[0].Threads[1].Tid != 8 {
		t.Fatalf("groups: %+v", groups)
	}
}
