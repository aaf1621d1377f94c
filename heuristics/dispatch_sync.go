package heuristics

// dispatch_sync onto the queue the thread itself drains. A serial
// queue runs one block at a time, on whichever thread drains it; the
// main queue only ever on the main thread. dispatch_sync waits until the
// queue has run the block it was given, so a thread that dispatch_syncs
// onto the queue it is draining (a block of queue Q that syncs onto Q;
// the main thread, in a run-loop callback or a dealloc the run loop's
// autorelease pool runs, that syncs onto the main queue) waits for
// itself. The queue is an argument a dump rarely shows, so the verdict
// on a paste is hedged: the thread's own role is what the frames say.

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

const dispatchSyncFamily = "libdispatch sync"

// dispatchOwnQueue says how a thread blocked in dispatch_sync is itself
// the one that drains a serial queue, "" when it is not or the wait is no
// dispatch_sync: the main thread (by its queue label or its main-thread
// frames), or a thread running a serial queue's block (libdispatch's
// serial drain below the asker; a global queue's block, under
// _dispatch_root_queue_drain alone, drains no serial queue).
func dispatchOwnQueue(t *stacks.Thread) string {
	class, caller := waitOf(t)
	if class != waitLock || !dispatchSyncWait(t.Stack[:min(caller, len(t.Stack))]) {
		return ""
	}
	if strings.Contains(t.Name, "com.apple.root.") {
		return "" // a block of a global (concurrent) queue: it drains no serial queue
	}
	if strings.Contains(t.Name, "com.apple.main-thread") {
		return fmt.Sprintf("%s is the main thread (its queue is com.apple.main-thread), the only thread that runs the main queue's blocks", threadLabel(t))
	}
	for _, f := range t.Stack[caller:] {
		k := funcKey(f)
		switch {
		case k == "main" || k == "NSApplicationMain" || k == "UIApplicationMain":
			return fmt.Sprintf("%s is the main thread (`%s` is on its stack), the only thread that runs the main queue's blocks", threadLabel(t), frameName(f))
		case strings.Contains(k, "dispatch_root_queue_drain"):
			return "" // a block of a global (concurrent) queue, no serial one's
		case strings.Contains(k, "dispatch_queue_drain") || strings.Contains(k, "dispatch_lane_serial_drain") ||
			strings.Contains(k, "dispatch_main_queue_callback") || strings.Contains(k, "dispatch_main_queue_drain"):
			return fmt.Sprintf("%s runs a block of a serial dispatch queue (`%s` is below the dispatch_sync on its stack): while it runs, that queue runs nothing else", threadLabel(t), frameName(f))
		}
	}
	return ""
}

// dispatchSyncWait: the wait machinery is libdispatch's dispatch_sync.
func dispatchSyncWait(machinery []stacks.Frame) bool {
	for _, f := range machinery {
		if r := nativeRow(f); r != nil && r.Family == dispatchSyncFamily {
			return true
		}
	}
	return false
}

// dispatchSyncDiagnosis words a lone dispatch_sync waiter's self-deadlock.
func dispatchSyncDiagnosis(d *Diagnosis, lw loneWaiter, waits, only string) {
	t := lw.ref.Thread
	d.Summary = fmt.Sprintf("%s waits in %s for a serial queue to run its block, and it is itself the thread that drains the queue it most likely dispatched onto: dispatch_sync onto the current queue waits for itself",
		threadLabel(t), waitSite(t))
	d.Chain = []string{waits, lw.dispatch,
		"dispatch_sync waits until the target queue has run the block; a serial queue runs one block at a time, on the thread that drains it",
		"if the target is the queue this thread is draining (the main queue, for the main thread), the block can run only after the current one returns, which waits for it",
		only}
	d.Fix = "Never dispatch_sync onto the queue the code may already be on: run the block directly when already there (on the main thread, check pthread_main_np() or [NSThread isMainThread]), or use dispatch_async. Code that runs at unpredictable places (dealloc, callbacks, notifications) is where this hides."
	d.Refs = []string{"https://developer.apple.com/documentation/dispatch/1452870-dispatch_sync"}
	d.Evidence = append(d.Evidence, "the target queue is not in the paste (an argument the frames do not show): lldb's `frame variable` in the dispatch_sync frame, or the queue's label, would settle which queue it is")
}
