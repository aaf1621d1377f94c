package heuristics_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// A macOS spindump names the thread a blocked thread waits for ("blocked
// by turnstile waiting for mutex_o2 [8123] thread 0x5a1b2"): the wait-for
// graph takes that thread as the owner of the lock, as it takes a pthread
// mutex's __owner.

func diagnoseSpindump(t *testing.T, name, text string) (*stacks.Snapshot, []heuristics.Diagnosis) {
	t.Helper()
	if text == "" {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", "spindump", name))
		if err != nil {
			t.Fatal(err)
		}
		text = string(b)
	}
	snap, _, err := stacks.ParseSpindump(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	ds := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	for _, d := range ds {
		t.Logf("%s: [%s, %s, deadlock=%v] %s", name, d.ID, d.Confidence, d.Deadlock, d.Summary)
	}
	return snap, ds
}

// mutex_o2 rendered as a spindump (stacks/macos_test.go says how): main
// joins ant, ant and three more workers are blocked by turnstile on main.
// The named owners close the cycle main → ant → main at medium confidence
// (owners named by the dump, not read from memory); the quoted, cut paste
// of the same report gives the same.
func TestTurnstileOwnersCycle(t *testing.T) {
	for _, name := range []string{"mutex_o2_heavy.txt", "pasted_quoted.md"} {
		t.Run(name, func(t *testing.T) {
			snap, ds := diagnoseSpindump(t, name, "")
			main, ant := threadNamed(t, snap, "com.apple.main-thread").Tid, threadNamed(t, snap, "ant").Tid
			if d := dumpTop(t, ds, "lock-order-cycle"); d != nil {
				wantTids(t, d, "main and ant", main, ant)
				wantConfidence(t, d, heuristics.Medium)
				wantSummary(t, d, "pthread_join", "held by")
				if len(d.Tids) != 2 {
					t.Errorf("tids %v: want the two threads of the cycle", d.Tids)
				}
			}
			for _, d := range ds {
				if strings.Contains(d.Summary, "no owner is recorded") {
					t.Errorf("[%s] %s: the dump names the owners", d.ID, d.Summary)
				}
			}
		})
	}
}

// sigrelock: the logger's handler waits for the lock the logger holds
// ("waiting for this thread"): the re-entry names it, not self-deadlock.
func TestTurnstileSelfInHandler(t *testing.T) {
	snap, ds := diagnoseSpindump(t, "sigrelock_self.txt", "")
	if d := dumpTop(t, ds, "signal-handler-reentry"); d != nil {
		wantTids(t, d, "the logger", threadNamed(t, snap, "logger").Tid)
	}
}

// Hand-written (a minimal spindump in the format the parser reads, made
// for this test): one thread of two re-locks a lock it owns, as the
// kernel says ("waiting for this thread"), outside any signal handler.
const turnstileSelf = `Process:          relock [9001]
Num samples:      1000 (1-1000)

  Thread 0x7a001    DispatchQueue "com.apple.main-thread"(1)    1000 samples (1-1000)    priority 31 (base 31)
  1000  start + 1903 (dyld + 24800) [0x18f6fa0e0]
    1000  main + 88 (relock + 16252) [0x1008f3f7c]
      1000  __ulock_wait + 8 (libsystem_kernel.dylib + 12812) [0x18fa0b20c]
       *1000  ??? (kernel + 6798096) [0xfffffe000b0cbb10] (blocked by turnstile waiting for relock [9001] thread 0x7a002)

  Thread 0x7a002    Thread name "cache"    1000 samples (1-1000)    priority 31 (base 31)
  1000  thread_start + 8 (libsystem_pthread.dylib + 7456) [0x18fa4ad3c]
    1000  _pthread_start + 136 (libsystem_pthread.dylib + 28564) [0x18fa4ff94]
      1000  cache_refresh + 60 (relock + 15164) [0x1029f7b3c]
        1000  cache_lookup + 44 (relock + 14764) [0x1029f79ac]
          1000  pthread_mutex_lock + 84 (libsystem_pthread.dylib + 9652) [0x18fa4a5b4]
            1000  _pthread_mutex_firstfit_lock_slow + 248 (libsystem_pthread.dylib + 17612) [0x18fa4c4cc]
              1000  __psynch_mutexwait + 8 (libsystem_kernel.dylib + 20908) [0x18fa0d1ac]
               *1000  psynch_mtxcontinue + 0 (pthread + 18136) [0xfffffe000a8b46d8] (blocked by turnstile waiting for this thread)
`

func TestTurnstileSelfDeadlock(t *testing.T) {
	snap, ds := diagnoseSpindump(t, "hand-written relock", turnstileSelf)
	if d := dumpTop(t, ds, "self-deadlock"); d != nil {
		wantTids(t, d, "the cache thread", threadNamed(t, snap, "cache").Tid)
		wantConfidence(t, d, heuristics.Medium)
		wantSummary(t, d, "which it already holds")
	}
}

// Hand-written: a paste that starts mid-tree (the waiter's header cut,
// "[unique pid …]" as newer spindumps print it) and ends inside the
// owner's stack. The owner, named by the dump, does not run and the paste
// cut what it waits on: most likely a lock-order cycle, at low
// confidence. The same owner shown whole, running, is no deadlock.
const turnstileCut = `        1000  db_commit + 40 (store + 14764) [0x1029f79ac]
          1000  pthread_mutex_lock + 84 (libsystem_pthread.dylib + 9652) [0x18fa4a5b4]
            1000  __psynch_mutexwait + 8 (libsystem_kernel.dylib + 20908) [0x18fa0d1ac]
             *1000  psynch_mtxcontinue + 0 (pthread + 18136) [0xfffffe000a8b46d8] (blocked by turnstile waiting for store [812] [unique pid 4410] thread 0x1f02)

  Thread 0x1f02    Thread name "flusher"    1000 samples (1-1000)    priority 31 (base 31)
  1000  thread_start + 8 (libsystem_pthread.dylib + 7456) [0x18fa4ad3c]
    1000  _pthread_start + 136 (libsystem_pthread.dylib + 28564) [0x18fa4ff94]
      1000  flush_loop + 60 (store + 15164) [0x1029f7b3c]
        1000  flush_page + 12 (store.c:88`

func TestTurnstileOwnerCut(t *testing.T) {
	snap, ds := diagnoseSpindump(t, "hand-written cut", turnstileCut)
	flusher := threadNamed(t, snap, "flusher").Tid
	if d := dumpTop(t, ds, "lock-order-cycle"); d != nil {
		wantTids(t, d, "the waiter and the flusher", 0, flusher)
		wantConfidence(t, d, heuristics.Low)
		wantSummary(t, d, "held by thread 7938 `flusher`", "cuts the holder's stack")
	}
	running := strings.Replace(turnstileCut, "flush_page + 12 (store.c:88", "flush_page + 12 (store.c:88 in store + 15200) [0x1029f7b60] (running)", 1)
	_, ds = diagnoseSpindump(t, "hand-written cut, owner running", running)
	for _, d := range ds {
		if d.Deadlock {
			t.Errorf("owner runs: deadlock claimed: [%s] %s", d.ID, d.Summary)
		}
	}
}

// Hand-written: two threads each blocked by the other's lock
// (an ABBA between two turnstiles): a lock-order cycle whose fix names
// both locks by their holders.
const turnstileABBA = `Process:          relock [9001]
Num samples:      1000 (1-1000)

  Thread 0x7a001    DispatchQueue "com.apple.main-thread"(1)    1000 samples (1-1000)    priority 31 (base 31)
  1000  start + 1903 (dyld + 24800) [0x18f6fa0e0]
    1000  main + 88 (relock + 16252) [0x1008f3f7c]
      1000  pthread_mutex_lock + 84 (libsystem_pthread.dylib + 9652) [0x18fa4a5b4]
        1000  __psynch_mutexwait + 8 (libsystem_kernel.dylib + 20908) [0x18fa0d1ac]
         *1000  psynch_mtxcontinue + 0 (pthread + 18136) [0xfffffe000a8b46d8] (blocked by turnstile waiting for relock [9001] thread 0x7a002)

  Thread 0x7a002    Thread name "cache"    1000 samples (1-1000)    priority 31 (base 31)
  1000  thread_start + 8 (libsystem_pthread.dylib + 7456) [0x18fa4ad3c]
    1000  _pthread_start + 136 (libsystem_pthread.dylib + 28564) [0x18fa4ff94]
      1000  cache_refresh + 60 (relock + 15164) [0x1029f7b3c]
        1000  pthread_mutex_lock + 84 (libsystem_pthread.dylib + 9652) [0x18fa4a5b4]
          1000  __psynch_mutexwait + 8 (libsystem_kernel.dylib + 20908) [0x18fa0d1ac]
           *1000  psynch_mtxcontinue + 0 (pthread + 18136) [0xfffffe000a8b46d8] (blocked by turnstile waiting for relock [9001] thread 0x7a001)
`

func TestTurnstileABBA(t *testing.T) {
	snap, ds := diagnoseSpindump(t, "hand-written abba", turnstileABBA)
	main, cache := threadNamed(t, snap, "com.apple.main-thread").Tid, threadNamed(t, snap, "cache").Tid
	if d := dumpTop(t, ds, "lock-order-cycle"); d != nil {
		wantTids(t, d, "main and cache", main, cache)
		wantConfidence(t, d, heuristics.Medium)
		if want := fmt.Sprintf("the lock thread %d holds and the lock thread %d holds", cache, main); !strings.Contains(d.Fix, want) {
			t.Errorf("fix %q: want %q", d.Fix, want)
		}
	}
}
