package heuristics

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "loader-lock",
		Title: "Deadlock through the dynamic loader's lock",
		Explain: "dlopen, dlclose, dl_iterate_phdr and the first use of a dlopen'ed module's TLS hold the " +
			"loader's lock while they run constructors, callbacks and TLS setup. If that code takes an " +
			"application lock while another thread holds it and calls into the loader (dlopen, dlsym, " +
			"dl_iterate_phdr as exception unwinding and backtrace do), each waits for the other.",
		Fix: "Take no application lock in code the loader runs (constructors, dl_iterate_phdr callbacks, TLS " +
			"initialisation) that other threads can hold while calling into the loader. Load libraries before " +
			"starting threads or outside the application lock, and move work out of constructors into an " +
			"explicit init called after dlopen returns.",
		Needs: []string{"owners"},
		Rank:  30,
		Match: matchLoaderLock,
	})
}

// isLoaderLock: the loader's recursive locks live in _rtld_global
// (dl_load_lock, dl_load_write_lock, dl_load_tls_lock).
func isLoaderLock(m *stacks.Mutex) bool { return m != nil && isLoaderLockSymbol(m.Symbol) }

// isLoaderLockSymbol: the symbol of one of those locks, as attach reads
// it or gdb prints it beside an address (ld.so's own code names
// _rtld_global by its hidden alias _rtld_local).
func isLoaderLockSymbol(sym string) bool {
	return strings.HasPrefix(sym, "_rtld_global") || strings.HasPrefix(sym, "_rtld_local") || strings.Contains(sym, "dl_load_")
}

// waitsForLoaderLock: a thread blocked on the loader's lock, by the
// mutex's symbol or because the code asking for the lock is the loader's.
func waitsForLoaderLock(t *stacks.Thread) bool {
	if w := threadWait(t); w != nil && isLoaderLock(w.Mutex) {
		return true
	}
	class, caller := waitOf(t)
	return class == waitLock && inLoader(t.Stack[:min(caller+1, len(t.Stack))])
}

// loaderWait is a thread inside the loader, waiting for a lock, while
// other threads wait for the loader lock it holds.
type loaderWait struct {
	inLoader  ThreadRef
	forLoader []ThreadRef
	cycle     []Edge // from the graph when owners were read, starting at inLoader
	// cut: the threads' stacks end above their waits (cutInversion)
	cut bool
}

// findLoaderWaits finds cycles through the loader lock in the graph and,
// where no owner is known, the same shape by frames.
func findLoaderWaits(a *analysis) []loaderWait { return result(a, "loader waits", detectLoaderWaits) }

func detectLoaderWaits(a *analysis) []loaderWait {
	var found []loaderWait
	for _, c := range a.cycles {
		if len(c) < 2 {
			continue
		}
		for i, e := range c {
			if e.Kind == EdgeMutex && waitsForLoaderLock(e.From.Thread) {
				// The loader lock's holder starts the story.
				start := (i + 1) % len(c)
				rot := append(append([]Edge(nil), c[start:]...), c[:start]...)
				lw := loaderWait{inLoader: e.To, cycle: rot}
				for _, e := range rot {
					if e.Kind == EdgeMutex && waitsForLoaderLock(e.From.Thread) {
						lw.forLoader = append(lw.forLoader, e.From)
					}
				}
				found = append(found, lw)
				break
			}
		}
	}
	for p := range a.liveProcs() {
		var lw loaderWait
		fs := a.factsIn(p)
		for i, t := range p.Threads {
			if a.running(t) {
				lw = loaderWait{} // somebody runs: it may be the holder, and it may release
				break
			}
			class, caller := fs[i].class, fs[i].caller
			if class != waitLock {
				continue
			}
			if w := threadWait(t); w != nil && w.Mutex != nil && a.resolveOwner(p, w.Mutex).Kind != OwnerUnknown {
				continue // the graph knows this wait
			}
			switch {
			case waitsForLoaderLock(t):
				lw.forLoader = append(lw.forLoader, ThreadRef{p, t})
			case lw.inLoader.Thread == nil && inLoader(t.Stack[caller:]):
				lw.inLoader = ThreadRef{p, t}
			}
		}
		if lw.inLoader.Thread != nil && len(lw.forLoader) > 0 {
			found = append(found, lw)
		} else if lw, ok := a.cutInversion(p); ok {
			found = append(found, lw)
		}
	}
	return found
}

// cutInversion finds, in a process none of whose threads runs, the
// loader lock and an allocator's lock taken in opposite orders by two
// threads whose pasted stacks end above their waits (the frames of the
// wait cut, or a person's chain of the calls that matter): one is in the
// allocator, called from inside the loader (dlopen, dlclose, a
// constructor: it holds the loader lock), the other in the loader,
// called from inside the allocator (a stack trace taken in malloc walks
// the loaded objects: it holds the allocator's lock). Each most likely
// waits for what the other holds.
func (a *analysis) cutInversion(p *stacks.Process) (loaderWait, bool) {
	var lw loaderWait
	type roles struct{ allocInLoader, loaderOverAlloc bool }
	memo := map[stackID]roles{} // a dump's 100,000 threads show a few stacks
	fs := a.factsIn(p)
	for i, t := range p.Threads {
		if a.running(t) {
			return loaderWait{}, false
		}
		if fs[i].class != notWaiting || len(t.Stack) < 2 {
			continue
		}
		r := byStack(memo, t.Stack, func() roles {
			top, below := t.Stack[0], t.Stack[1:]
			return roles{allocatorFrame(top) && inLoader(below), isLoaderFrame(top) && slices.ContainsFunc(below, allocatorFrame)}
		})
		switch {
		case lw.inLoader.Thread == nil && r.allocInLoader:
			lw.inLoader = ThreadRef{p, t}
		case r.loaderOverAlloc:
			lw.forLoader = append(lw.forLoader, ThreadRef{p, t})
		}
	}
	lw.cut = true
	return lw, lw.inLoader.Thread != nil && len(lw.forLoader) > 0
}

// loaderEntry is the outermost loader frame: how the thread got into the
// loader (dlopen, dl_iterate_phdr, __tls_get_addr).
func loaderEntry(stack []stacks.Frame) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if loaderFrameAt(stack, i) {
			return frameName(stack[i])
		}
	}
	if i, ok := loadedCtors(stack); ok {
		return frameName(stack[i]) // the loaded object's constructors, called by the loader
	}
	return "?"
}

func matchLoaderLock(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for _, lw := range findLoaderWaits(a) {
		in := lw.inLoader.Thread
		d := Diagnosis{Deadlock: true, Refs: []string{
			"https://man7.org/linux/man-pages/man3/dlopen.3.html",
			"https://man7.org/linux/man-pages/man3/dl_iterate_phdr.3.html",
		}}
		if lw.cycle != nil {
			d.Confidence = a.graphConfidence(lw.inLoader.Proc)
			d.Summary = fmt.Sprintf("%s holds the loader lock inside `%s` and %s",
				threadLabel(in), loaderEntry(in.Stack), chainPredicate(lw.cycle))
			d.Chain = append(Chain(lw.cycle), "which closes the cycle: the loader lock is released only when the loader call returns")
			for _, e := range lw.cycle {
				d.Evidence = append(d.Evidence, stackLine(e.From.Thread))
				if e.Lock != nil {
					d.Evidence = append(d.Evidence, a.mutexFacts(e.Lock.Mutex))
				}
			}
			var refs []ThreadRef
			for _, e := range lw.cycle {
				refs = append(refs, e.From)
			}
			d.name(refs...)
		} else if lw.cut {
			d.Confidence = Low
			first := lw.forLoader[0].Thread
			d.Summary = fmt.Sprintf("%s is in the allocator (`%s`) called from inside the dynamic loader (`%s`), while %s is in the loader (`%s`) called from inside the allocator: the loader lock and the allocator's lock taken in opposite orders, each thread most likely waiting for what the other holds",
				threadLabel(in), frameName(in.Stack[0]), loaderEntry(in.Stack), threadLabel(first), frameName(first.Stack[0]))
			d.Chain = []string{
				fmt.Sprintf("%s entered the loader through `%s`, which holds the loader lock, and there calls the allocator (`%s`), which takes the allocator's lock", threadLabel(in), loaderEntry(in.Stack), frameName(in.Stack[0])),
			}
			for _, r := range lw.forLoader {
				d.Chain = append(d.Chain, fmt.Sprintf("%s is inside the allocator and calls the loader (`%s`, which takes the loader lock): it holds the allocator's lock while it waits for the loader's", threadLabel(r.Thread), frameName(r.Thread.Stack[0])))
			}
			d.Evidence = []string{"the pasted stacks end above the waits (their lock frames are not in the paste) and no mutex owner was read: the cycle is inferred from where each thread is"}
			refs := append([]ThreadRef{lw.inLoader}, lw.forLoader...)
			for _, r := range refs {
				d.Evidence = append(d.Evidence, stackLine(r.Thread))
			}
			d.name(refs...)
		} else {
			d.Confidence = Low
			first := lw.forLoader[0].Thread
			d.Summary = fmt.Sprintf("%s waits for a lock in %s inside the dynamic loader (`%s`), while %s waits for the loader lock in `%s`: each most likely holds what the other needs",
				threadLabel(in), waitSite(in), loaderEntry(in.Stack), threadLabel(first), loaderEntry(first.Stack))
			d.Chain = []string{
				fmt.Sprintf("%s entered the loader through `%s`, which holds the loader lock while it runs constructors, callbacks or TLS setup", threadLabel(in), loaderEntry(in.Stack)),
				fmt.Sprintf("there it waits for a lock in %s", waitSite(in)),
			}
			for _, r := range lw.forLoader {
				d.Chain = append(d.Chain, fmt.Sprintf("%s waits for the loader lock in %s; it most likely holds the lock %s waits for", threadLabel(r.Thread), waitSite(r.Thread), threadLabel(in)))
			}
			d.Evidence = []string{"no mutex owner was read: the cycle is inferred from frame names"}
			refs := append([]ThreadRef{lw.inLoader}, lw.forLoader...)
			for _, r := range refs {
				d.Evidence = append(d.Evidence, stackLine(r.Thread))
			}
			d.name(refs...)
		}
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		ds = matchLoneLoader(a)
	}
	return ds
}
