package heuristics

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "signal-handler-reentry",
		Title: "Signal handler re-takes a lock its thread holds",
		Explain: "A signal handler runs on the thread it interrupts. When the interrupted code held a lock " +
			"(malloc's arena lock, a stdio stream, a logger's mutex) and the handler takes the same lock, " +
			"the thread waits for itself: the lock is released only when the handler returns. The stack " +
			"shows the acquisition twice, once on each side of `<signal handler called>`.",
		Fix: "Call only async-signal-safe functions in a signal handler (signal-safety(7)): no malloc, stdio, " +
			"locks or loggers. Set a volatile sig_atomic_t flag or write(2) a byte to a self-pipe and do the " +
			"work outside the handler, or block the signal with pthread_sigmask and take it synchronously in " +
			"a dedicated thread with sigwait or signalfd.",
		Needs: []string{"owners"},
		Rank:  25,
		Match: matchSignalReentry,
	})
}

// reentry is a thread blocked on a lock inside a signal handler while
// the code the signal interrupted holds it.
type reentry struct {
	waiter ThreadRef
	sig    int   // where the handler's frames end: the signal frame's index
	below  int   // the first interrupted frame
	byName bool  // the signal frame was lost from the paste: the handler is known by its name
	caller int   // the frame in the handler that asked for the lock
	edge   *Edge // the mutex wait, when the owner was read
	// held is the frame below the signal frame that holds the lock, and
	// family what kind of lock both sides take ("malloc", "stdio", …),
	// when only frame names speak.
	held   int
	family string
	// unseen: the interrupted frames are not in the paste (cut, or no
	// symbols), and the handler waits for a lock-holding library's lock.
	unseen bool
}

// findReentries finds the threads re-entered by a signal handler: with
// owners, a thread waiting above a signal frame for a mutex it owns;
// without, the same lock family (or the same function) on both sides of
// the signal frame.
func findReentries(a *analysis) []reentry { return result(a, "reentries", detectReentries) }

func detectReentries(a *analysis) []reentry {
	var found []reentry
	type split struct {
		sig, below, caller int
		byName, ok         bool
	}
	memo := factMemo[split]{} // a dump's 100,000 threads show a few stacks
	for p, t := range a.liveThreads() {
		s := perStack(memo, t, func() split {
			sig, below, byName, ok := signalSplit(t.Stack)
			class, caller := a.wait(t)
			return split{sig, below, caller, byName, ok && sig > 0 && class.isLock() && caller <= sig}
		})
		if !s.ok {
			continue
		}
		sig, below, byName, caller := s.sig, s.below, s.byName, s.caller
		r := reentry{waiter: ThreadRef{p, t}, sig: sig, below: below, byName: byName, caller: caller, held: -1}
		if es := a.WaitsFor(t); len(es) > 0 && es[0].Kind == EdgeMutex && es[0].Lock.Owner.Kind != OwnerUnknown {
			e := es[0]
			if e.Lock.Owner.Kind == OwnerLive && e.To.Thread == t && e.Lock.Mutex.Kind&kindMask != kindRecursive {
				r.edge = &e
				found = append(found, r)
			}
			continue // the owner speaks: another owner is no re-entry
		}
		if r.held, r.family = sameAddrBelow(t, below); r.held >= 0 {
			found = append(found, r)
		} else if r.held, r.family = sameLockBelow(t.Stack, caller, sig, below); r.held >= 0 {
			found = append(found, r)
		} else if fam := handlerFamily(t.Stack, caller, sig); fam != "" && !interruptedShown(t, below) {
			// The handler waits for the lock of a library that is not
			// async-signal-safe, and what the signal interrupted is
			// not shown: most likely that library, holding the lock.
			r.held, r.family, r.unseen = min(below, len(t.Stack)-1), fam, true
			found = append(found, r)
		} else if !interruptedShown(t, below) && threadCount(p) == 1 {
			// The handler waits for a lock of the program's own (a
			// logger's, a profiler's buffer lock), nothing the
			// signal interrupted is shown, and no other thread is in
			// sight to hold it: the handler took a lock that is not
			// async-signal-safe, most likely held by the code it
			// interrupted on this very thread.
			r.held, r.unseen = min(below, len(t.Stack)-1), true
			found = append(found, r)
		}
	}
	return found
}

// sameAddrBelow looks below the signal frame for a frame called with the
// address of the lock the handler waits for (a dump's arguments): the
// interrupted code had that lock in hand.
func sameAddrBelow(t *stacks.Thread, below int) (int, string) {
	l, _, ok := waitArgLock(t)
	if !ok {
		return -1, ""
	}
	ls, at := argAddrsIn(t.Stack, below, len(t.Stack))
	for i, o := range ls {
		if o.Addr == l.Addr {
			if l.Symbol == "" {
				l.Symbol = o.Symbol
			}
			if l.Symbol != "" {
				return at[i], "`" + l.Symbol + "`"
			}
			return at[i], fmt.Sprintf("%#x", l.Addr)
		}
	}
	return -1, ""
}

// sameLockBelow looks below the signal frame for a frame that takes the
// same lock as the handler's frames from caller to the signal frame: one
// of the same lock family, or the very function that asked for the lock.
func sameLockBelow(stack []stacks.Frame, caller, sig, below int) (int, string) {
	above := map[string]bool{}
	for _, f := range stack[caller:sig] {
		if fam := lockFamily(f); fam != "" {
			above[fam] = true
		}
	}
	asker := ""
	if caller < sig {
		asker = funcKey(stack[caller])
	}
	// The signal interrupted a trylock of the lock family the handler
	// waits for: the lock word is set before the owner field is written,
	// so the lock is the interrupted code's even when no owner shows.
	if below < len(stack) {
		if r := nativeRow(stack[below]); r != nil && r.Role == stacks.RoleTry {
			for _, f := range stack[:caller] {
				if w := nativeRow(f); w != nil && w.Role.IsLock() && w.Family == r.Family {
					return below, "`" + r.Family + "`"
				}
			}
		}
	}
	for i := below; i < len(stack); i++ {
		if fam := lockFamily(stack[i]); above[fam] {
			return i, fam
		}
		if asker != "" && funcKey(stack[i]) == asker {
			return i, "`" + frameName(stack[i]) + "`"
		}
	}
	return -1, ""
}

// lockFamily names the lock a well-known non-async-signal-safe function
// takes (the vocabulary's lock-holding libraries, and the loader), ""
// for others.
func lockFamily(f stacks.Frame) string {
	if fam := heldFamily(f); fam != "" {
		return fam
	}
	if isLoaderFrame(f) {
		return "dynamic loader"
	}
	return ""
}

var signalReentryRefs = []string{
	"https://man7.org/linux/man-pages/man7/signal-safety.7.html",
	"https://man7.org/linux/man-pages/man3/pthread_sigmask.3.html",
	"https://man7.org/linux/man-pages/man2/signalfd.2.html",
}

func matchSignalReentry(a *analysis) []Diagnosis {
	var ds []Diagnosis
	// A lone allocator-lock waiter whose handler the paste cut
	// (loneWaiterOf): hedged, with the frames that would settle it.
	for p := range a.liveProcs() {
		if lw, ok := a.loneWaiterOf(p); ok && lw.id == "signal-handler-reentry" {
			ds = append(ds, a.loneWaiterDiagnosis(lw))
		}
	}
	for _, r := range findReentries(a) {
		t := r.waiter.Thread
		handler := frameName(t.Stack[r.sig-1]) // the function the kernel called
		interrupted := "?"
		if r.below < len(t.Stack) {
			interrupted = frameName(t.Stack[r.below])
		}
		asker := handler
		for i := r.caller; i < r.sig; i++ {
			if strings.Trim(t.Stack[i].Func, "?") != "" {
				asker = frameName(t.Stack[i]) // the first named frame: a stripped library's internals say nothing
				break
			}
		}
		d := Diagnosis{Deadlock: true, Refs: signalReentryRefs}
		d.name(r.waiter)
		if r.edge != nil {
			m := r.edge.Lock.Mutex
			d.Confidence = a.graphConfidence(r.waiter.Proc)
			d.Summary = fmt.Sprintf("%s waits in signal handler `%s` for %s, which it already holds: the signal interrupted it in `%s`",
				threadLabel(t), handler, mutexLabel(m), interrupted)
			d.Chain = []string{
				fmt.Sprintf("%s holds %s (the mutex records it as owner) and was running `%s`", threadLabel(t), mutexLabel(m), interrupted),
				fmt.Sprintf("a signal ran handler `%s` on the same thread", handler),
				fmt.Sprintf("the handler, in `%s`, waits for %s: the thread waits for itself, and the interrupted code that would unlock it cannot run until the handler returns", asker, mutexLabel(m)),
			}
			d.Evidence = []string{a.mutexFacts(m)}
		} else if r.unseen {
			d.Confidence = Low
			inside := fmt.Sprintf("inside signal handler `%s`", handler)
			ran := fmt.Sprintf("the kernel ran handler `%s` on %s", handler, threadLabel(t))
			if crashReport(t.Stack, r.sig) {
				inside = fmt.Sprintf("inside `%s`, which captures the thread's own stack trace, a crash handler's work", handler)
				ran = fmt.Sprintf("%s is writing a crash report (`%s` captures its stack trace): a fatal signal's handler, whose frames are below the paste's cut", threadLabel(t), handler)
			}
			d.Summary = fmt.Sprintf("%s waits for %s in `%s` %s: the %s lock is not async-signal-safe, and the signal most likely interrupted the thread while it held it (the interrupted frames are not in the paste)",
				threadLabel(t), waitLockName(t), asker, inside, r.family)
			d.Chain = []string{
				ran,
				fmt.Sprintf("the handler calls `%s`, which waits for the %s lock", asker, r.family),
				"a signal handler that takes a lock of a library that is not async-signal-safe waits for ever when the signal arrived while its own thread held that lock",
			}
			if r.family == "" { // the program's own lock, the paste's only thread
				d.Summary = fmt.Sprintf("%s waits for %s in `%s` %s, and no other thread in the paste could hold it: a lock taken in a signal handler is not async-signal-safe, and the signal most likely interrupted the thread while it held it (the interrupted frames are not in the paste)",
					threadLabel(t), waitLockName(t), asker, inside)
				d.Chain = []string{
					ran,
					fmt.Sprintf("the handler calls `%s`, which waits for %s", asker, waitLockName(t)),
					"it is the only thread in the paste: the holder is most likely the code the signal interrupted, which cannot run on until the handler returns",
				}
			}
			d.Evidence = []string{"the frames below the signal frame are cut or have no symbols: a paste with them would show whether the interrupted code holds the lock"}
			d.Hints = []Hint{attachHint(r.waiter.Proc.Pid, "to see whether the interrupted code holds the lock")}
		} else {
			held := frameName(t.Stack[r.held])
			d.Confidence = Medium
			d.Summary = fmt.Sprintf("%s waits for %s in `%s` inside signal handler `%s`, which interrupted it in `%s` holding the same %s lock",
				threadLabel(t), waitLockName(t), asker, handler, held, r.family)
			d.Chain = []string{
				fmt.Sprintf("%s was inside `%s`, which takes the %s lock, when a signal arrived", threadLabel(t), held, r.family),
				fmt.Sprintf("the kernel ran handler `%s` on the same thread", handler),
				fmt.Sprintf("the handler calls `%s`, which waits for the same %s lock: the thread waits for itself", asker, r.family),
			}
			d.Evidence = []string{"no mutex owner was read: the same lock is inferred from the function names on both sides of the signal frame"}
		}
		d.Evidence = append(d.Evidence,
			stackLineN(t, r.below+2),
			signalSplitText(r))
		ds = append(ds, d)
	}
	return ds
}

// handlerFamily is the lock-holding library (malloc, stdio, …) the
// handler's frames from caller to the signal frame are in, "".
func handlerFamily(stack []stacks.Frame, caller, sig int) string {
	for _, f := range stack[caller:sig] {
		if fam := lockFamily(f); fam != "" {
			return fam
		}
	}
	return ""
}

// interruptedShown: the paste shows what the signal interrupted, frames
// from below on with a symbol. A lone last frame the paste cuts inside its
// name ("… in tcmallo") shows nothing sure: its name may be any function.
func interruptedShown(t *stacks.Thread, below int) bool {
	if below == len(t.Stack)-1 && stacks.FrameCut(t, below) {
		return false
	}
	return namedFrom(t.Stack, below)
}

// namedFrom: some frame from i on has a symbol.
func namedFrom(stack []stacks.Frame, i int) bool {
	for _, f := range stack[min(i, len(stack)):] {
		if strings.Trim(f.Func, "?") != "" {
			return true
		}
	}
	return false
}

// signalSplitText says where the handler's frames end and the
// interrupted ones begin, and how that is known.
func signalSplitText(r reentry) string {
	if crashReport(r.waiter.Thread.Stack, r.sig) {
		return fmt.Sprintf("no `<signal handler called>` frame and no handler in the paste, which is cut below #%d: `%s` captures the thread's own stack trace, what a crash handler does after a fatal signal, and a thread that waits for the %s lock no other thread holds while it does is most likely inside that handler",
			r.sig-1, frameName(r.waiter.Thread.Stack[r.sig-1]), r.family)
	}
	if r.byName {
		h := r.waiter.Thread.Stack[r.sig-1]
		by := "its name"
		if handlerSignature(h) {
			by = fmt.Sprintf("its arguments (%s=%s first: a handler's signal number)", h.Args[0].Name, h.Args[0].Value)
		}
		if r.below >= len(r.waiter.Thread.Stack) {
			return fmt.Sprintf("no `<signal handler called>` frame in the paste, which ends at #%d: `%s` is a signal handler by %s, so frames #0–#%d ran in the handler and the interrupted ones are below the cut",
				r.sig-1, frameName(h), by, r.sig-1)
		}
		return fmt.Sprintf("no `<signal handler called>` frame in the paste (Markdown drops that line, leaving an empty frame): `%s` is a signal handler by %s, so frames #0–#%d ran in the handler and those from #%d were interrupted",
			frameName(h), by, r.sig-1, r.below)
	}
	return fmt.Sprintf("signal frame at #%d: handler frames #0–#%d, interrupted frames from #%d", r.sig, r.sig-1, r.below)
}
