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

// The other goroutine dumps stored (Go 1.19, `go test` timeouts, the
// runtime's own detector, pasted variants): the Go signature each leads
// with, and that none gets a verdict of the native signatures instead.
func TestGoStoredDumps(t *testing.T) {
	tests := []struct {
		file, id, confidence string
		tids                 []int
	}{
		{"go119_abba_sigquit.txt", "lock-order-cycle", heuristics.Medium, []int{18, 19}},
		{"go119_rlock_sigquit.txt", "self-deadlock", heuristics.Medium, []int{6, 7}},
		{"abba_sigquit_crash.txt", "lock-order-cycle", heuristics.Medium, []int{20, 21}},
		{"abba_sigquit_system.txt", "lock-order-cycle", heuristics.Medium, []int{18, 19}},
		{"abba_pprof_debug2.txt", "lock-order-cycle", heuristics.Medium, []int{6, 7}},
		{"abba_runtime_stack.txt", "lock-order-cycle", heuristics.Medium, []int{18, 19}},
		{"pasted_issue.md", "lock-order-cycle", heuristics.Medium, []int{18, 19}},
		{"quoted_reply.txt", "self-deadlock", heuristics.Medium, []int{21, 22}},
		// The runtime's detector fired; the Mutex relocked through add →
		// count says why.
		{"deadlock_fatal.txt", "self-deadlock", heuristics.Medium, []int{1}},
		{"no_tabs.txt", "self-deadlock", heuristics.Medium, []int{1}},
		// The test holds s.mu and waits on a channel the worker would close
		// after locking s.mu: no pointer tells who holds it, every goroutine
		// but `go test`'s alarm is blocked.
		{"gotest_timeout.txt", "all-goroutines-asleep", heuristics.Medium, []int{1, 21, 22}},
		{"go119_gotest_timeout.txt", "all-goroutines-asleep", heuristics.Medium, []int{1, 18, 19}},
		{"ci_log.txt", "all-goroutines-asleep", heuristics.Medium, []int{1, 21, 22}},
		{"log_two_dumps.txt", "waitgroup-never-done", heuristics.Medium, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ds := diagnoseGoText(t, readGoDump(t, tt.file))
			d := ds[0]
			if d.ID != tt.id || d.Confidence != tt.confidence || fmt.Sprint(d.Tids) != fmt.Sprint(tt.tids) {
				t.Errorf("got %s %s %v, want %s %s %v: %s\nall: %s", d.ID, d.Confidence, d.Tids, tt.id, tt.confidence, tt.tids, d.Summary, goIDs(ds))
			}
			for _, o := range ds[1:] {
				if o.Deadlock && o.ID != "goroutine-leak" {
					t.Errorf("a second deadlock verdict: %s %s", o.ID, o.Summary)
				}
			}
		})
	}
}

func readGoDump(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", "goroutines", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func diagnoseGoText(t *testing.T, text string) []heuristics.Diagnosis {
	t.Helper()
	snap, _, _, err := stacks.Parse(strings.NewReader(text), "")
	if err != nil {
		t.Fatal(err)
	}
	ds := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	if len(ds) == 0 {
		return []heuristics.Diagnosis{{ID: "(none)"}}
	}
	return ds
}

// goDump builds a goroutine dump from goroutines written as the runtime
// prints them.
func goDump(gs ...string) string {
	return "SIGQUIT: quit\nPC=0x4711 m=0 sigcode=0\n\n" + strings.Join(gs, "\n") + "\n"
}

// gr is one goroutine: id, status, frames ("fn(args) file:line"), and
// its creator ("fn file:line in N", or "").
func gr(id int, status string, creator string, frames ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "goroutine %d [%s]:\n", id, status)
	for _, f := range frames {
		call, loc, _ := strings.Cut(f, " ")
		fmt.Fprintf(&b, "%s\n\t%s +0x1\n", call, loc)
	}
	fmt.Fprintf(&b, "runtime.goexit({})\n\t/go/src/runtime/asm_amd64.s:1771 +0x1\n")
	if creator != "" {
		fn, rest, _ := strings.Cut(creator, " ")
		loc, in, _ := strings.Cut(rest, " in ")
		fmt.Fprintf(&b, "created by %s in goroutine %s\n\t%s +0x1\n", fn, in, loc)
	}
	return b.String()
}

var (
	chanRecvFrames = []string{"runtime.gopark(0x1?) /go/src/runtime/proc.go:462", "runtime.chanrecv(0xc000100000, 0x0, 0x1) /go/src/runtime/chan.go:667",
		"runtime.chanrecv1(0x1?, 0x2?) /go/src/runtime/chan.go:506"}
	selectFrames = []string{"runtime.gopark(0x1?) /go/src/runtime/proc.go:462", "runtime.selectgo(0xc000010f38, 0xc000010f10, 0x0?, 0x0, 0x2?, 0x1) /go/src/runtime/select.go:351"}
	sleepFrames  = []string{"runtime.gopark(0x1?) /go/src/runtime/proc.go:462", "time.Sleep(0x1dcd6500) /go/src/runtime/time.go:363"}
)

func mutexWait(obj string) []string {
	return []string{"runtime.gopark(0x1?) /go/src/runtime/proc.go:462", "internal/sync.runtime_SemacquireMutex(0x1?) /go/src/runtime/sema.go:95",
		"internal/sync.(*Mutex).lockSlow(" + obj + ") /go/src/internal/sync/mutex.go:149", "internal/sync.(*Mutex).Lock(...) /go/src/internal/sync/mutex.go:70",
		"sync.(*Mutex).Lock(...) /go/src/sync/mutex.go:46"}
}

func with(a []string, more ...string) []string { return append(append([]string(nil), a...), more...) }

// What the Go signatures must not claim, and the edges they must get right.
func TestGoSignatureEdges(t *testing.T) {
	acceptLoop := gr(3, "IO wait", "main.main /src/m.go:2 in 1", "runtime.gopark(0x1?) /go/src/runtime/proc.go:462",
		"internal/poll.runtime_pollWait(0x7f, 0x72) /go/src/runtime/netpoll.go:351", "internal/poll.(*pollDesc).wait(0xc000080000?, 0x0?, 0x0) /go/src/internal/poll/fd_poll_runtime.go:84",
		"internal/poll.(*FD).Accept(0xc000080000) /go/src/internal/poll/fd_unix.go:613", "net.(*netFD).accept(0xc000080000) /go/src/net/fd_unix.go:161",
		"main.serve() /src/m.go:40")
	mainSelect := gr(1, "select (no cases)", "", "runtime.gopark(0x1?) /go/src/runtime/proc.go:462", "runtime.block() /go/src/runtime/select.go:104", "main.main() /src/main.go:9")
	var pool []string
	for i := 0; i < 300; i++ {
		pool = append(pool, gr(100+i, "select, 30 minutes", "main.startPool /src/pool.go:12 in 1", with(selectFrames, "main.worker(0xc000200000) /src/pool.go:20")...))
	}
	var leak999 []string
	for i := 0; i < 999; i++ {
		leak999 = append(leak999, gr(100+i, "select", "main.handle /src/h.go:12 in 1", with(selectFrames, "main.handle.func1() /src/h.go:14")...))
	}
	var senders []string
	for i := 0; i < 150; i++ {
		senders = append(senders, gr(100+i, "chan send, 12 minutes", "main.fanOut /src/f.go:12 in 1",
			"runtime.gopark(0x1?) /go/src/runtime/proc.go:462", fmt.Sprintf("runtime.chansend(0xc0009%05x, 0x0, 0x1) /go/src/runtime/chan.go:283", i*0x60),
			"runtime.chansend1(0x1?, 0x2?) /go/src/runtime/chan.go:161", "main.fanOut.func1() /src/f.go:14"))
	}
	tests := []struct {
		name, dump, id, confidence string
		deadlock                   bool
	}{
		// An idle worker pool: workers in a select for jobs for half an
		// hour, main parked in select {}. Idle, not deadlocked.
		{"idle pool", goDump(append([]string{mainSelect}, pool...)...), "", "", false},
		// main receiving from a channel nobody else reaches: signal.Notify
		// and timers feed main like that; no claim.
		{"main receives", goDump(gr(1, "chan receive, 5 minutes", "", with(chanRecvFrames, "main.main() /src/main.go:9")...)), "", "", false},
		// A receive from a ticker started by an init that returned: the
		// creator left, but under a minute of wait it may be a timer's
		// channel: low confidence.
		{"ticker receive", goDump(mainSelect, gr(7, "chan receive", "main.startTicker /src/t.go:5 in 1", with(chanRecvFrames, "main.tick() /src/t.go:9")...)),
			"channel-no-partner", heuristics.Low, true},
		{"nil channel", goDump(mainSelect, gr(7, "chan send (nil chan)", "main.main /src/main.go:5 in 1",
			"runtime.gopark(0x1?) /go/src/runtime/proc.go:462", "runtime.chansend(0x0, 0x0, 0x1) /go/src/runtime/chan.go:170",
			"runtime.chansend1(0x0?, 0x0?) /go/src/runtime/chan.go:161", "main.produce() /src/main.go:20")),
			"channel-no-partner", heuristics.High, true},
		// A goroutine locks a mutex through an outer frame holding its
		// struct, but another goroutine's frame holds the struct too: who
		// holds it is not this goroutine alone: no self-deadlock; all
		// goroutines blocked, so the hidden "all asleep".
		{"relock, two candidates", goDump(
			gr(5, "sync.Mutex.Lock, 3 minutes", "main.main /src/m.go:3 in 1", with(mutexWait("0xc000300000"), "main.(*s).inner(0xc000300000) /src/m.go:20", "main.(*s).outer(0xc000300000) /src/m.go:15")...),
			gr(6, "chan send, 3 minutes", "main.main /src/m.go:4 in 1",
				"runtime.gopark(0x1?) /go/src/runtime/proc.go:462", "runtime.chansend(0xc000400000, 0x0, 0x1) /go/src/runtime/chan.go:283",
				"runtime.chansend1(0x1?, 0x2?) /go/src/runtime/chan.go:161", "main.(*s).report(0xc000300000) /src/m.go:30"),
			mainSelect), "all-goroutines-asleep", heuristics.Medium, true},
		// 999 goroutines parked at one place for under a minute: under
		// the bar for a leak.
		{"999 parked", goDump(append([]string{gr(1, "sleep", "", with(sleepFrames, "main.main() /src/main.go:9")...)}, leak999...)...), "", "", false},
		// 150 goroutines of 151 stuck sending at one place for 12 minutes:
		// a leak under the 1,000 bar (their creator is still there, so
		// no channel-no-partner).
		{"senders pile up", goDump(append([]string{gr(1, "sleep", "", with(sleepFrames, "main.fanOut() /src/f.go:16", "main.main() /src/main.go:9")...)}, senders...)...),
			"goroutine-leak", heuristics.Medium, true},
		// Two goroutines on two mutexes nothing points at, nothing else
		// runs: the low-confidence fallback of lock-order-cycle.
		{"two mutexes, no pointers", goDump(mainSelect,
			gr(5, "sync.Mutex.Lock, 4 minutes", "main.main /src/m.go:3 in 1", with(mutexWait("0xc000500000"), "main.a() /src/m.go:20")...),
			gr(6, "sync.Mutex.Lock, 4 minutes", "main.main /src/m.go:4 in 1", with(mutexWait("0xc000600000"), "main.b() /src/m.go:30")...)),
			"lock-order-cycle", heuristics.Low, true},
		// A listener's accept loop on the network poller beside a
		// goroutine blocked four minutes on a mutex nothing points at
		// (go_left_locked.go): the poller does not help it, and no
		// goroutine waits where it could hold the mutex: left locked
		// (low confidence); under a minute, no claim (the network wait
		// may hold it across a call).
		{"poller beside stuck locks", goDump(mainSelect, acceptLoop,
			gr(5, "sync.Mutex.Lock, 4 minutes", "main.main /src/m.go:3 in 1", with(mutexWait("0xc000500000"), "main.a() /src/m.go:20")...)),
			"orphaned-lock", heuristics.Low, true},
		{"poller beside a fresh lock wait", goDump(mainSelect, acceptLoop,
			gr(5, "sync.Mutex.Lock", "main.main /src/m.go:3 in 1", with(mutexWait("0xc000500000"), "main.a() /src/m.go:20")...)),
			"", "", false},
		// A WaitGroup whose worker, a closure of the waiting function, is
		// alive (blocked on a mutex): it may yet call Done.
		{"waitgroup, worker alive", goDump(
			gr(1, "sync.WaitGroup.Wait, 2 minutes", "", "runtime.gopark(0x1?) /go/src/runtime/proc.go:462",
				"sync.runtime_SemacquireWaitGroup(0x1?) /go/src/runtime/sema.go:114", "sync.(*WaitGroup).Wait(0xc000700000) /go/src/sync/waitgroup.go:206",
				"main.main() /src/m.go:9"),
			gr(5, "sync.Mutex.Lock, 2 minutes", "main.main /src/m.go:7 in 1", with(mutexWait("0xc000800000"), "main.main.func1() /src/m.go:8")...)),
			"all-goroutines-asleep", heuristics.Medium, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := diagnoseGoText(t, tt.dump)
			d := ds[0]
			if tt.id == "" {
				for _, d := range ds {
					if d.Deadlock {
						t.Errorf("deadlock claimed: %s %s: %s", d.ID, d.Confidence, d.Summary)
					}
				}
				return
			}
			if d.ID != tt.id || d.Confidence != tt.confidence || d.Deadlock != tt.deadlock {
				t.Errorf("got %s %s deadlock=%v, want %s %s %v: %s\nall: %s", d.ID, d.Confidence, d.Deadlock, tt.id, tt.confidence, tt.deadlock, d.Summary, goIDs(ds))
			}
		})
	}
}

// Signatures: each new Go id is in the catalogue once, with its rank
// between the lock signatures and the verdicts that are not deadlocks.
func TestGoSignaturesRegistered(t *testing.T) {
	lock := heuristics.Lookup("lock-order-cycle")
	for _, id := range []string{"channel-no-partner", "waitgroup-never-done", "goroutine-leak", "all-goroutines-asleep"} {
		s := heuristics.Lookup(id)
		if s == nil {
			t.Fatalf("%s not registered", id)
		}
		if s.Rank <= lock.Rank || s.Rank >= heuristics.Lookup("lost-wakeup").Rank {
			t.Errorf("%s: rank %d, want between lock-order-cycle's %d and lost-wakeup's", id, s.Rank, lock.Rank)
		}
	}
}

// A dump cut anywhere (a paste that stops mid-goroutine) still gets a
// diagnosis without a panic, and never a high-confidence claim the cut
// stack could not support but for the runtime's own word or a nil channel.
func TestGoCutDumps(t *testing.T) {
	for _, name := range []string{"abba_sigquit.txt", "rlock_sigquit.txt", "chansend_sigquit.txt", "waitgroup_sigquit.txt",
		"deadlock_fatal.txt", "gotest_timeout.txt", "go119_abba_sigquit.txt", "server_sigquit.txt"} {
		text := readGoDump(t, name)
		for i := 1; i < 40; i++ {
			cut := text[:len(text)*i/40]
			snap, _, _, err := stacks.Parse(strings.NewReader(cut), "goroutines")
			if err != nil {
				continue
			}
			for _, d := range heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses {
				if d.Confidence == heuristics.High && d.Deadlock && d.ID != "all-goroutines-asleep" && d.ID != "channel-no-partner" {
					t.Errorf("%s cut at %d/40: %s high: %s", name, i, d.ID, d.Summary)
				}
			}
		}
	}
}

// TestGoWaitsForGraphs: the waits the graph renderers draw for the abba
// dump: each transfer goroutine waits on its own mutex, which the other
// may hold; main waits on the WaitGroup, which nobody holds.
func TestGoWaitsForGraphs(t *testing.T) {
	snap, _, _, err := stacks.Parse(strings.NewReader(readGoDump(t, "abba_sigquit.txt")), "")
	if err != nil {
		t.Fatal(err)
	}
	ws := heuristics.Diagnose(snap, heuristics.Options{}).GoWaits
	locks := map[int]heuristics.GoWait{}
	for _, w := range ws {
		if w.Kind == stacks.GoWaitMutex {
			locks[w.Goroutine.Thread.Tid] = w
		} else if len(w.Holders) > 0 {
			t.Errorf("goroutine %d waits on %s %#x with holders %v: only locks have holders", w.Goroutine.Thread.Tid, w.Kind, w.Object, w.Holders)
		}
	}
	if len(locks) != 2 {
		t.Fatalf("%d mutex waits, want the two transfers: %+v", len(locks), ws)
	}
	for tid, w := range locks {
		if len(w.Holders) != 1 || w.Holders[0].Thread.Tid == tid || locks[w.Holders[0].Thread.Tid].Object == w.Object {
			t.Errorf("goroutine %d waits on %#x, holders %v: want the other transfer alone", tid, w.Object, w.Holders)
		}
	}
}

// cutGoroutines drops from a real dump the goroutines whose header
// holds one of the statuses given, as a paste that shows only some of
// them does.
func cutGoroutines(dump string, statuses ...string) string {
	blocks := strings.Split(dump, "\n\n")
	var keep []string
	for _, b := range blocks {
		head, _, _ := strings.Cut(b, "\n")
		drop := false
		for _, s := range statuses {
			drop = drop || strings.HasPrefix(head, "goroutine ") && strings.Contains(head, "["+s)
		}
		if !drop {
			keep = append(keep, b)
		}
	}
	return strings.Join(keep, "\n\n")
}

// TestGoLoneReader: the rlock patient's dump without its writer (a
// paste of the stuck reader alone). A reader waits only behind a writer;
// none is in sight and nothing runs: the recursive RLock is the likely
// cause, said with low confidence and naming the reader only. With a
// goroutine running (it may be the writer) nothing is claimed.
func TestGoLoneReader(t *testing.T) {
	lone := cutGoroutines(readGoDump(t, "rlock_sigquit.txt"), "sync.RWMutex.Lock")
	if strings.Contains(lone, "[sync.RWMutex.Lock") || !strings.Contains(lone, "[sync.RWMutex.RLock") {
		t.Fatal("the cut dump should keep the reader and drop the writer")
	}
	ds := diagnoseGoText(t, lone)
	if d := ds[0]; d.ID != "self-deadlock" || d.Confidence != heuristics.Low || fmt.Sprint(d.Tids) != "[21]" ||
		!strings.Contains(d.Summary, "recursive RLock") {
		t.Errorf("got %s %s %v: %s\nall: %s", d.ID, d.Confidence, d.Tids, d.Summary, goIDs(ds))
	}
	// the running goroutine goes among the others, above the registers
	// the runtime prints last (after them, it would be another run's)
	regs := strings.Index(lone, "\nrax ")
	if regs < 0 {
		t.Fatal("no register dump in rlock_sigquit.txt")
	}
	running := lone[:regs+1] + gr(40, "running", "main.main /src/main.go:10 in 1", "main.work() /src/main.go:20") + "\n" + lone[regs:]
	for _, d := range diagnoseGoText(t, running) {
		if d.ID == "self-deadlock" {
			t.Errorf("a goroutine runs that may be the writer, yet: %s %s", d.ID, d.Summary)
		}
	}
}

// TestGoHoldAndWait (hand-written goroutines, as the runtime prints
// them): a goroutine inside bbolt's db.Update callback waits for a
// mutex: it holds the database's writer lock and waits for another, one
// half of a lock-order cycle (the mutex is no field of what the frames
// received: not a relock of its own). Not said when a goroutine runs (it may
// release the mutex), nor without the transaction frame, nor under an
// ORM's Update (gorm's holds no database lock).
func TestGoHoldAndWait(t *testing.T) {
	update := []string{"main.(*store).save.func1(0xc0000a4000) /src/store.go:41",
		"go.etcd.io/bbolt.(*DB).Update(0xc000180000, 0xc0000b2f50) /go/pkg/mod/go.etcd.io/bbolt@v1.3.7/db.go:765",
		"main.(*store).save(0xc000120000) /src/store.go:38", "main.main() /src/main.go:20"}
	waiter := gr(1, "sync.Mutex.Lock, 12 minutes", "", with(mutexWait("0xc000300010"), update...)...)
	ds := diagnoseGoText(t, goDump(waiter))
	if d := ds[0]; d.ID != "lock-order-cycle" || d.Confidence != heuristics.Low || fmt.Sprint(d.Tids) != "[1]" ||
		!strings.Contains(d.Summary, "bbolt.(*DB).Update") {
		t.Errorf("got %s %s %v: %s\nall: %s", d.ID, d.Confidence, d.Tids, d.Summary, goIDs(ds))
	}
	running := gr(7, "running", "main.main /src/main.go:12 in 1", "main.work() /src/main.go:50")
	noTx := gr(1, "sync.Mutex.Lock, 12 minutes", "", with(mutexWait("0xc000300010"), "main.(*store).save(0xc000120000) /src/store.go:38", "main.main() /src/main.go:20")...)
	gorm := gr(1, "sync.Mutex.Lock, 12 minutes", "", with(mutexWait("0xc000300010"), "gorm.io/gorm.(*DB).Update(0xc000180000, {0x9a1b2c, 0x4}) /go/pkg/mod/gorm.io/gorm@v1.25.0/finisher_api.go:393", "main.main() /src/main.go:20")...)
	for name, dump := range map[string]string{"a goroutine runs": goDump(waiter, running), "no transaction": goDump(noTx), "an ORM's Update": goDump(gorm)} {
		for _, d := range diagnoseGoText(t, dump) {
			if d.ID == "lock-order-cycle" {
				t.Errorf("%s: %s %s: %s", name, d.ID, d.Confidence, d.Summary)
			}
		}
	}
}

// TestGoLongSendPasted (hand-written pastes): a goroutine alone, parked
// in a plain channel send for hours, as Delve's `goroutines -t` lists it
// (no creator, no channel address): its receiver gave up, said with low
// confidence. A receive parked as long is an idle worker, and a send
// parked a few minutes may yet be taken: neither is claimed.
func TestGoLongSendPasted(t *testing.T) {
	delve := func(status string) string {
		return "  Goroutine 31 - User: /src/pump.go:40 main.(*pump).forward (0x4a1b2c) [" + status + "]\n" +
			"\t0  0x000000000043f725 in runtime.gopark\n\t    at /usr/lib/golang/src/runtime/proc.go:337\n" +
			"\t1  0x000000000040be5a in runtime.chansend\n\t    at /usr/lib/golang/src/runtime/chan.go:257\n" +
			"\t2  0x000000000040bbb5 in runtime.chansend1\n\t    at /usr/lib/golang/src/runtime/chan.go:143\n" +
			"\t3  0x00000000004a1b2c in main.(*pump).forward\n\t    at /src/pump.go:40\n"
	}
	ds := diagnoseGoText(t, delve("chan send 2h3m4.5s"))
	if d := ds[0]; d.ID != "channel-no-partner" || d.Confidence != heuristics.Low || fmt.Sprint(d.Tids) != "[31]" ||
		!strings.Contains(d.Summary, "123 minutes") || !strings.Contains(d.Summary, "main.(*pump).forward") {
		t.Errorf("got %s %s %v: %s\nall: %s", d.ID, d.Confidence, d.Tids, d.Summary, goIDs(ds))
	}
	for _, status := range []string{"chan send 4m0s", "chan receive 2h3m4.5s"} {
		text := delve(status)
		if strings.Contains(status, "receive") {
			text = strings.ReplaceAll(strings.ReplaceAll(text, "chansend1", "chanrecv1"), "chansend", "chanrecv")
		}
		for _, d := range diagnoseGoText(t, text) {
			if d.ID == "channel-no-partner" {
				t.Errorf("%s: %s %s: %s", status, d.ID, d.Confidence, d.Summary)
			}
		}
	}
}

// TestGoPastedLeak (hand-written pastes): a paste that begins inside a
// goroutine (its header cut) and then shows one goroutine parked for 49
// minutes sending in the same function: two of a pile, a leak (low). The
// sender alone is a send without a receiver instead.
func TestGoPastedLeak(t *testing.T) {
	send := with([]string{"runtime.gopark(0x1?) /go/src/runtime/proc.go:462", "runtime.chansend(0xc000200000, 0xc000051f00, 0x1) /go/src/runtime/chan.go:283",
		"runtime.chansend1(0x1?, 0x2?) /go/src/runtime/chan.go:161"}, "main.(*conn).readLoop(0xc000100000) /src/conn.go:66")
	cut := "main.(*conn).readLoop(0xc000100400)\n\t/src/conn.go:66 +0xd2\ncreated by main.serve in goroutine 1\n\t/src/conn.go:39 +0x1\n\n"
	one := gr(4711, "chan send, 49 minutes", "", send...)
	ds := diagnoseGoText(t, cut+one)
	if d := ds[0]; d.ID != "goroutine-leak" || d.Confidence != heuristics.Low || len(d.Tids) != 2 || !strings.Contains(d.Summary, "main.(*conn).readLoop") {
		t.Errorf("got %s %s %v: %s\nall: %s", d.ID, d.Confidence, d.Tids, d.Summary, goIDs(ds))
	}
	if d := diagnoseGoText(t, one)[0]; d.ID != "channel-no-partner" || d.Confidence != heuristics.Low {
		t.Errorf("the sender alone: %s %s: %s", d.ID, d.Confidence, d.Summary)
	}
}

// TestGoProfileLeak (hand-written debug=1 records, in the form of
// testdata/dumps/pprof-goroutine/abba_debug1.txt): a profile hides the
// runtime's frames at the top of a stack, so a record whose first
// addresses are not its first frame shown was parked in the runtime for a
// reason it does not print. 5000 at one closure are a pile: goroutine-leak
// (low). Eight idle workers parked alike are not; nor are 5000 whose
// first frame is their first address (on a CPU, not parked).
func TestGoProfileLeak(t *testing.T) {
	profile := func(n int, pcs string) string {
		return fmt.Sprintf("goroutine profile: total %d\n%d @ %s 0x471041\n"+
			"#\t0x981c6f\texample.com/timeout.Run.func1+0x4f\t/src/timeout.go:61\n\n"+
			"1 @ 0x43d2d6 0x4d962f 0x471041\n#\t0x4d962e\tmain.main+0xce\t/src/main.go:31\n", n+1, n, pcs)
	}
	parked := "0x43d2d6 0x4079ee 0x40759d 0x981c70"
	if d := diagnoseGoText(t, profile(5000, parked))[0]; d.ID != "goroutine-leak" || d.Confidence != heuristics.Low ||
		len(d.Tids) != 5000 || !strings.Contains(d.Summary, "example.com/timeout.Run.func1") {
		t.Errorf("got %s %s %d: %s", d.ID, d.Confidence, len(d.Tids), d.Summary)
	}
	for name, text := range map[string]string{"eight idle workers": profile(8, parked), "on a CPU": profile(5000, "0x981c70")} {
		for _, d := range diagnoseGoText(t, text) {
			if d.ID == "goroutine-leak" {
				t.Errorf("%s: %s %s", name, d.ID, d.Summary)
			}
		}
	}
}

// TestGoUnknownRWMutex (hand-written abridged pastes: headers with a
// reader's "# name" after them, frames without addresses): one writer in
// RWMutex.Lock and a reader in RLock, both for minutes, nothing running:
// most likely a recursive RLock (low). Two writers, or a goroutine that
// runs, leave it unsaid.
func TestGoUnknownRWMutex(t *testing.T) {
	w := "goroutine 421 [sync.RWMutex.Lock, 11 minutes]:   # writer\nmain.(*store).Reset(...)\n\t/src/store.go:68\n\n"
	r := "goroutine 44 [sync.RWMutex.RLock, 11 minutes]:   # reader\nmain.(*store).Len(...)\n\t/src/store.go:114\nmain.(*store).Objects(...)\n\t/src/store.go:120\n\n"
	ds := diagnoseGoText(t, w+r)
	if d := ds[0]; d.ID != "self-deadlock" || d.Confidence != heuristics.Low || fmt.Sprint(d.Tids) != "[44 421]" {
		t.Errorf("got %s %s %v: %s\nall: %s", d.ID, d.Confidence, d.Tids, d.Summary, goIDs(ds))
	}
	w2 := strings.ReplaceAll(w, "421", "422")
	run := "goroutine 7 [running]:\nmain.work(...)\n\t/src/work.go:3\n\n"
	for name, text := range map[string]string{"two writers": w + w2 + r, "a goroutine runs": w + r + run} {
		for _, d := range diagnoseGoText(t, text) {
			if d.ID == "self-deadlock" {
				t.Errorf("%s: %s %s", name, d.ID, d.Summary)
			}
		}
	}
}

// TestGoGoleakReport (hand-written in goleak's form: its header line, a
// "Goroutine N in state …, with … on top of the stack:" line before each
// goroutine): the goroutines goleak lists leaked, by its check at the end
// of the test: goroutine-leak (medium) naming them, not a channel without
// partner. The same goroutines in a plain dump are not called a leak.
func TestGoGoleakReport(t *testing.T) {
	recv := with(chanRecvFrames, "example.com/pool.(*Pool).loop(0xc000100000) /src/pool.go:55")
	g1 := gr(31, "chan receive", "example.com/pool.New /src/pool.go:40 in 7", recv...)
	g2 := gr(32, "chan receive", "example.com/pool.New /src/pool.go:40 in 8", recv...)
	report := "--- FAIL: TestMain (0.00s)\nfound unexpected goroutines:\n" +
		"Goroutine 31 in state chan receive, with example.com/pool.(*Pool).loop on top of the stack:\n" + g1 + "\n" +
		"Goroutine 32 in state chan receive, with example.com/pool.(*Pool).loop on top of the stack:\n" + g2
	ds := diagnoseGoText(t, report)
	if d := ds[0]; d.ID != "goroutine-leak" || d.Confidence != heuristics.Medium || fmt.Sprint(d.Tids) != "[31 32]" || !strings.Contains(d.Summary, "goleak found 2 goroutines") {
		t.Errorf("got %s %s %v: %s\nall: %s", d.ID, d.Confidence, d.Tids, d.Summary, goIDs(ds))
	}
	for _, d := range diagnoseGoText(t, goDump(g1, g2)) {
		if d.ID == "goroutine-leak" {
			t.Errorf("a plain dump of two receivers: %s", d.Summary)
		}
	}
}
