package heuristics

import (
	"fmt"
	"path"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// A paste often holds only one side of a loader deadlock: the thread the
// reporter found stuck. Its stack still says the loader is involved, in
// one of three ways, each a lock-order inversion with a thread that is
// not in the paste:
//
//   - it waits for the loader's own lock (dlsym, dladdr, dlopen asking
//     for dl_load_lock): the holder is a thread inside dlopen, dlclose or
//     a dl_iterate_phdr callback, itself waiting;
//   - it waits for another lock from inside the loader (a constructor, a
//     dl_iterate_phdr callback, TLS setup) and so holds the loader lock
//     while it waits;
//   - it waits for an unwinder's lock (libunwind, libgcc): an unwinder
//     holds its lock while it walks the loaded objects through
//     dl_iterate_phdr, so the loader lock is the other half of the cycle.

// loaderSide says how a lone lock waiter's stack involves the loader,
// "" when it does not.
func loaderSide(t *stacks.Thread) string {
	if w := threadWait(t); w != nil && isLoaderLock(w.Mutex) {
		return "loader-lock-wait"
	}
	class, caller := waitOf(t)
	if class != waitLock || len(t.Stack) == 0 {
		return ""
	}
	caller = min(caller, len(t.Stack)-1)
	if askerAgain(t.Stack, caller, false) >= 0 {
		return "" // the function that asks for the lock runs further down too: a re-entry, not the loader
	}
	// The lock's name, from the arguments of the frames that take it.
	for _, f := range t.Stack[:caller+1] {
		for _, a := range f.Args {
			if l, ok := argAddr(a); ok && isLoaderLockSymbol(l.Symbol) {
				return "loader-lock-wait"
			}
		}
	}
	// The few frames that asked for the lock, then the rest of the stack.
	for i := caller; i < min(caller+3, len(t.Stack)); i++ {
		if isLoaderFrame(t.Stack[i]) {
			return "loader-lock-wait"
		}
		if heldFamily(t.Stack[i]) == "unwinder" {
			return "unwinder-lock-wait"
		}
	}
	if inLoader(t.Stack[caller:]) && !atStartup(t.Stack) {
		return "inside-loader"
	}
	if _, ok := loadedCtors(t.Stack[caller:]); ok {
		return "inside-loader"
	}
	return ""
}

// askerAgain returns where, below the frame at caller that asked for a
// lock, the same function runs again (in the same file, when both
// frames name one): the thread re-entered the code that holds the lock.
// -1 when it does not. strict leaves out askers that say nothing or
// recur on any stack (no name, the lock machinery itself, the
// interpreter, call operators and trampolines); the loader's askers are
// native functions and count as they are.
func askerAgain(st []stacks.Frame, caller int, strict bool) int {
	if caller >= len(st) {
		return -1
	}
	asker := st[caller]
	k := funcKey(asker)
	if k == "" || strict && (strings.Trim(asker.Func, "?") == "" || nativeRow(asker) != nil || interpreterFrame(asker) || genericFrame(k)) {
		return -1
	}
	for j := caller + 1; j < len(st); j++ {
		if f := st[j]; funcKey(f) == k && sameSourceFile(f.File, asker.File) {
			return j
		}
	}
	return -1
}

// sameSourceFile: two frames of one function name may be the same
// function, by the files their lines are in: unknown, or the same file,
// or a header (an inlined callee's line, the lock's own header in one
// frame and another header in the other, says nothing of the function's
// file).
func sameSourceFile(a, b string) bool {
	return a == "" || b == "" || a == b || headerFile(a) || headerFile(b)
}

func headerFile(f string) bool {
	switch path.Ext(f) {
	case ".h", ".hh", ".hpp", ".hxx", ".inc", ".inl", ".tcc":
		return true
	}
	return false
}

// atStartup: the loader frames are the program's start (ld.so running
// the first constructors before main): no other thread exists yet to
// hold a lock against the loader's.
func atStartup(st []stacks.Frame) bool {
	switch loaderEntry(st) {
	case "_dl_start_user", "_dl_start", "_dl_start_final":
		return true
	}
	return false
}

// loneLoaderDiagnosis is the verdict on a lone waiter whose stack
// involves the loader (loneWaiter.loader).
func (a *analysis) loneLoaderDiagnosis(lw loneWaiter) Diagnosis {
	t := lw.ref.Thread
	d := a.loneWaiterDiagnosis(lw)
	d.Refs = []string{
		"https://man7.org/linux/man-pages/man3/dlopen.3.html",
		"https://man7.org/linux/man-pages/man3/dl_iterate_phdr.3.html",
	}
	lock, site := waitLockName(t), waitSite(t)
	var other string
	switch lw.loader {
	case "loader-lock-wait":
		d.Summary = fmt.Sprintf("%s waits for the dynamic loader's lock (%s) in %s and no thread in sight holds it: most likely a thread inside dlopen, dlclose or a dl_iterate_phdr callback holds it while it waits for a lock %s holds",
			threadLabel(t), lock, site, threadLabel(t))
		other = "the holder is inside the loader (dlopen, dlclose, a constructor or a dl_iterate_phdr callback) and waits in turn: the loader lock and an application or allocator lock taken in opposite orders"
	case "unwinder-lock-wait":
		d.Summary = fmt.Sprintf("%s waits for an unwinder's lock (%s) in %s: an unwinder holds its lock while it walks the loaded objects through dl_iterate_phdr, so the other half of the cycle is most likely the loader lock, held by a thread inside the loader that waits for this unwinder",
			threadLabel(t), lock, site)
		other = "the unwinder's lock holder needs the loader lock (dl_iterate_phdr), held by a thread inside the loader that in turn unwinds (an exception, a backtrace) and needs the unwinder's lock"
	default:
		d.Summary = fmt.Sprintf("%s waits for %s in %s from inside the dynamic loader (`%s`), which holds the loader lock while it runs: most likely the lock's holder waits for the loader lock",
			threadLabel(t), lock, site, loaderEntry(t.Stack))
		other = fmt.Sprintf("`%s` holds the loader lock while its constructors, callbacks or TLS setup run; the lock they wait for is held by a thread that calls into the loader (dlopen, dlsym, dl_iterate_phdr, an exception's unwinding)", loaderEntry(t.Stack))
	}
	d.Chain = []string{
		fmt.Sprintf("%s waits for %s in %s; no owner was recorded", threadLabel(t), lock, site),
		other,
	}
	d.Evidence = append(d.Evidence, "the thread on the other side of the cycle is not in the paste: all threads' stacks (gdb `thread apply all bt`) would show it inside the loader or holding the lock")
	return d
}

func matchLoneLoader(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for _, p := range a.Snap.Processes {
		if lw, ok := a.loneWaiterOf(p); ok && lw.id == "loader-lock" {
			ds = append(ds, a.loneLoaderDiagnosis(lw))
		}
	}
	return ds
}
