package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

func TestSignalReentryWithOwner(t *testing.T) {
	// log_event holds log_lock; SIGUSR1 runs on_usr1, which logs too.
	th := on(thread(51, "victim", mutexFrames("log_event", "on_usr1", "<signal>", "write", "log_event", "work", "start_thread")...),
		named(lockWait(0x602000, 51, 0), "log_lock"))
	snap := live(proc(50, th))
	d := one(t, "signal-handler-reentry", snap)
	complete(t, d)
	if d.Confidence != High {
		t.Errorf("confidence %s", d.Confidence)
	}
	has(t, "summary", d.Summary, "thread 51 `victim`", "signal handler `on_usr1`", "`log_lock` (0x602000)", "already holds", "interrupted it in `write`")
	has(t, "evidence", d.Evidence[1], "<signal handler called>", "log_event")
	// the more specific verdict only
	none(t, "self-deadlock", snap)
	none(t, "lock-order-cycle", snap)
}

func TestSignalReentryMallocByFrames(t *testing.T) {
	th := thread(61, "app", "__lll_lock_wait_private", "_int_malloc", "__libc_malloc", "strdup", "on_alarm",
		"<signal>", "_int_free", "__libc_free", "cleanup", "main")
	snap := pasted(proc(60, th))
	d := one(t, "signal-handler-reentry", snap)
	complete(t, d)
	if d.Confidence != Medium {
		t.Errorf("confidence %s", d.Confidence)
	}
	has(t, "summary", d.Summary, "thread 61 `app`", "`_int_malloc`", "signal handler `on_alarm`", "`_int_free`", "malloc lock")
	// nor the pasted-dump fallbacks for the same thread
	none(t, "self-deadlock", snap)
}

func TestSignalReentrySameFunction(t *testing.T) {
	th := thread(71, "", mutexFrames("audit_record", "on_term", "<signal>", "memcpy", "audit_record", "main")...)
	d := one(t, "signal-handler-reentry", pasted(proc(70, th)))
	has(t, "summary", d.Summary, "`audit_record`")
}

func TestSignalReentryNot(t *testing.T) {
	cases := map[string]*stacks.Thread{
		// the sighandler patient: the handler blocks in read(), no lock
		"read in handler": on(thread(81, "victim", "read", "handler_blocks", "on_usr1", "<signal>", "pause", "interrupted_work"),
			&stacks.Wait{Syscall: "read", Fd: 3, FdTarget: "pipe:[77]"}),
		// a lock in the handler held by another thread: an ordinary wait
		"other owner": on(thread(82, "v", mutexFrames("log_event", "on_usr1", "<signal>", "log_event", "main")...), lockWait(0x10, 83, 0)),
		// a recursive mutex re-locked in the handler does not block
		"recursive": on(thread(84, "v", mutexFrames("log_event", "on_usr1", "<signal>", "log_event", "main")...), lockWait(0x10, 84, kindRecursive)),
		// the lock is below the signal frame only
		"lock below": thread(85, "v", "pause", "on_usr1", "<signal>", "__lll_lock_wait", "pthread_mutex_lock", "main"),
		// a different lock family on each side
		"unrelated": thread(86, "v", "__lll_lock_wait_private", "_IO_fwrite", "handler", "<signal>", "_int_malloc", "malloc", "main"),
	}
	for name, th := range cases {
		t.Run(name, func(t *testing.T) {
			none(t, "signal-handler-reentry", live(proc(80, th, spinning(thread(83, "busy", "compute")))))
		})
	}
}

// A signal that lands inside pthread_mutex_trylock after the lock word is
// set and before the owner is written leaves a locked mutex with no owner
// (seen live on the jemalloc signal-handler patient): the handler that
// waits for a pthread mutex while the interrupted code was in trylock
// re-takes its own lock. Hand-written stack of that shape.
func TestReentryThroughInterruptedTrylock(t *testing.T) {
	th := thread(300, "logger", append(mutexFrames("log_write"), "on_sigusr1", "<signal>",
		"pthread_mutex_trylock", "try_log", "main")...)
	d := one(t, "signal-handler-reentry", pasted(proc(300, th)))
	has(t, "summary", d.Summary, "on_sigusr1", "pthread_mutex_trylock")
	// the same handler over code that takes no lock: no claim
	th2 := thread(301, "logger", append(mutexFrames("log_write"), "on_sigusr1", "<signal>", "compute", "main")...)
	none(t, "signal-handler-reentry", pasted(proc(301, th2)))
}

// A handler that waits for malloc's lock over interrupted frames the
// paste does not show (cut, or "??"): most likely the signal came inside
// malloc, low confidence, saying what would settle it. Hand-written, in
// the shape of a real nx-libs paste.
func TestReentryWithTheInterruptedSideUnseen(t *testing.T) {
	th := thread(310, "agent", "__lll_lock_wait_private", "_L_lock_15512", "malloc", "operator new", "LogStamp::LogStamp", "sigchld_handler", "<signal>", "??")
	d := one(t, "signal-handler-reentry", pasted(proc(310, th)))
	if d.Confidence != Low {
		t.Errorf("confidence %s, want low", d.Confidence)
	}
	has(t, "evidence", strings.Join(d.Evidence, "\n"), "cut or have no symbols")
}
