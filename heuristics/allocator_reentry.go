package heuristics

// An allocator re-entered on its own thread. An allocator takes its
// locks only inside its own functions and waits for nothing while it
// holds them, so a thread that waits for an allocator's lock nobody in
// sight holds is most often the holder itself: the allocator called out
// with the lock held (a malloc hook, an mmap/sbrk hook, an interposed
// pthread function, the unwinder of an exception thrown mid-allocation)
// and the code it called allocated again. When the stack shows both
// entries, the allocator's frames are on it twice with the program's code
// between: the inner entry waits, the outer one holds.

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// allocatorModules are the shared objects whose every function is the
// allocator's (its internals carry no name the vocabulary knows: a
// system allocator, a hook dispatcher).
var allocatorModules = []string{"libtcmalloc", "libjemalloc", "libmimalloc"}

// allocatorSources are words of the directories of allocators' sources
// (a dump with line info names the file even of inlined internals):
// jemalloc's include/jemalloc, gperftools' tree, glibc's malloc/.
var allocatorSources = []string{"jemalloc", "tcmalloc", "gperftools", "mimalloc"}

// allocatorFrame: a frame of the allocator, by the vocabulary (malloc's
// functions, an allocator's own lock functions), by jemalloc's prefix
// of every internal function, by its module or by its source file.
func allocatorFrame(f stacks.Frame) bool {
	if strings.HasPrefix(funcKey(f), "je_") {
		return true
	}
	dirs := strings.Split(strings.ToLower(filepath.ToSlash(filepath.Dir(f.File))), "/")
	for _, d := range dirs {
		if d == "malloc" {
			return true
		}
		for _, w := range allocatorSources {
			if strings.Contains(d, w) {
				return true
			}
		}
	}
	if heldFamily(f) == "malloc" {
		return true
	}
	if r := nativeRow(f); r != nil && r.Role.IsLock() && strings.Contains(r.Library, "malloc") {
		return true
	}
	base := filepath.Base(f.Module)
	for _, m := range allocatorModules {
		if strings.HasPrefix(base, m) {
			return true
		}
	}
	return false
}

// allocatorReentry says how a thread waiting for an allocator's lock
// shows the allocator twice on its stack, "" when it does not: from the
// frame that asked for the lock, the allocator's frames (the inner entry),
// then code of the program's (what the allocator called out to), then the
// allocator again (the outer entry, which holds the lock).
func allocatorReentry(t *stacks.Thread) string {
	_, caller := waitOf(t)
	return allocatorReentryFrom(t.Stack, caller)
}

// allocatorReentryFrom is allocatorReentry from the frame at caller.
func allocatorReentryFrom(st []stacks.Frame, caller int) string {
	i, inner := caller, -1
	for ; i < len(st) && (allocatorFrame(st[i]) || strings.Trim(st[i].Func, "?") == ""); i++ {
		if allocatorFrame(st[i]) && (inner < 0 || st[inner].Func == "" && st[i].Func != "") {
			inner = i // the first named one
		}
	}
	if inner < 0 {
		return ""
	}
	out := -1
	for ; i < len(st) && !allocatorFrame(st[i]); i++ {
		if st[i].Signal || isThreadStart(st[i]) {
			return ""
		}
		if out < 0 && strings.Trim(st[i].Func, "?") != "" {
			out = i
		}
	}
	if out < 0 || i >= len(st) {
		return ""
	}
	return fmt.Sprintf("the allocator is on the stack twice: `%s` (#%d) waits for the lock, called from `%s` (#%d), which the allocator itself called from `%s` (#%d) while it held the lock",
		frameName(st[inner]), inner, frameName(st[out]), out, frameName(st[i]), i)
}

// allocatorInitWait says how the allocator lock a thread waits for is
// the lock of the allocator's own initialisation, "" when nothing says
// so: the lock's symbol, or a function of the few that asked for it, is
// named for initialising (tcmalloc's init_cache_lock, jemalloc's
// init_lock in malloc_init_hard). That lock is held only while the
// allocator (or a thread's cache) starts up, so a thread that waits for
// it with no other thread in sight most often re-entered the
// initialisation itself: it allocated while initialising (a hook, a
// stack trace, a lazy TLS setup). A fork in that window is rare.
func allocatorInitWait(t *stacks.Thread) string {
	if l, _, ok := waitArgLock(t); ok && initWord(l.Symbol) {
		return fmt.Sprintf("the lock is `%s`, the allocator's initialisation lock", l.Symbol)
	}
	_, caller := waitOf(t)
	for i := caller; i < min(caller+3, len(t.Stack)); i++ {
		if allocatorFrame(t.Stack[i]) && initWord(frameName(t.Stack[i])) {
			return fmt.Sprintf("`%s` (#%d), which asks for it, initialises the allocator", frameName(t.Stack[i]), i)
		}
	}
	return ""
}

// initWord: a name with a word for initialising (init_lock, InitModule,
// malloc_init_hard; not "initial" or "uninit").
func initWord(name string) bool {
	words := strings.FieldsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	for _, w := range words {
		l := strings.ToLower(w)
		if l == "init" || l == "initialize" || l == "initialise" || strings.HasPrefix(w, "Init") && len(w) > 4 && w[4] >= 'A' && w[4] <= 'Z' {
			return true
		}
	}
	return false
}

// cutAllocatorWait: the dump left out the innermost frames of a thread
// inside the allocator whose stack shows the allocator entered again
// from its own call-outs: the cut frames are most likely the inner
// entry's wait for the lock the outer entry holds, a lock wait though
// its frames are not in the paste.
func cutAllocatorWait(t *stacks.Thread) bool {
	return stacks.TopCut(t) && len(t.Stack) > 0 && allocatorFrame(t.Stack[0]) && allocatorReentryFrom(t.Stack, 0) != ""
}

// cutAtAcquire: the dump left out the innermost frames of a thread whose
// first frame is a lock's acquire (a guard's constructor, a mutex's
// lock): the frames cut are that lock's wait (the reporter trimmed the
// futex frames), a lock wait though they are not in the paste.
func cutAtAcquire(t *stacks.Thread) bool {
	if !stacks.TopCut(t) || len(t.Stack) == 0 {
		return false
	}
	r := nativeRow(t.Stack[0])
	return r != nil && r.Role == stacks.RoleAcquire
}

// interposedAllocatorLock says how the allocator's lock call goes
// through an interposer, "" when it does not: the frame that asks for the
// lock is not the allocator's but a wrapper of the lock primitive (its
// name holds the primitive's, as a tracer's or profiler's
// `NSYS_OSRT_pthread_mutex_lock_0` does) in a shared object of its own,
// called from the allocator. Such a wrapper records or allocates as it
// wraps, and an allocation there re-enters the allocator on the thread
// that is taking (or already holds) the allocator's lock.
func interposedAllocatorLock(t *stacks.Thread) string {
	_, caller := waitOf(t)
	if caller <= 0 || caller >= len(t.Stack)-1 {
		return ""
	}
	f, prim := t.Stack[caller], strings.TrimLeft(funcKey(t.Stack[caller-1]), "_")
	k := funcKey(f)
	if prim == "" || f.Module == "" || allocatorFrame(f) || strings.TrimLeft(k, "_") == prim || !strings.Contains(k, prim) {
		return ""
	}
	for i := caller + 1; i < min(caller+3, len(t.Stack)); i++ {
		if allocatorFrame(t.Stack[i]) {
			return fmt.Sprintf("the allocator's lock call (`%s`, #%d) goes through `%s` (#%d, in %s), an interposed wrapper of `%s`: a wrapper that allocates re-enters the allocator on the thread that takes its lock",
				frameName(t.Stack[i]), i, frameName(f), caller, filepath.Base(f.Module), prim)
		}
	}
	return ""
}

// stackBottomShown: the thread's stack reaches its first function (a
// thread start, main), so nothing of it is below the paste's cut.
func stackBottomShown(t *stacks.Thread) bool {
	if len(t.Stack) == 0 {
		return false
	}
	f := t.Stack[len(t.Stack)-1]
	return isThreadStart(f) || funcKey(f) == "main"
}

// forkSafeAllocatorLock says which allocator lock a thread waits for that
// the allocator's own fork handlers cover, "" for another: jemalloc takes
// its arena and bin locks before fork() and re-initialises them in the
// child (jemalloc_prefork and jemalloc_postfork_child, registered with
// pthread_atfork; src/jemalloc.c, arena_prefork*), so a forked child does
// not inherit them locked. A wait for one that no thread in sight holds
// is a re-entry on the waiter's own thread, not a fork. (Its extent
// mutex pool was not covered before 5.3: jemalloc#2019.)
func forkSafeAllocatorLock(t *stacks.Thread) string {
	_, caller := waitOf(t)
	for i := caller; i < min(caller+4, len(t.Stack)); i++ {
		k := strings.TrimPrefix(funcKey(t.Stack[i]), "je_")
		for _, fn := range jemallocBinLockers {
			if k == fn {
				return fmt.Sprintf("`%s` takes a jemalloc arena bin lock, which jemalloc's fork handlers take before fork() and re-initialise in the child (jemalloc_prefork, jemalloc_postfork_child): no forked child inherits it locked", frameName(t.Stack[i]))
			}
		}
	}
	return ""
}

// jemallocBinLockers are jemalloc's functions (without the je_ prefix)
// that take an arena's bin lock to refill or flush a thread cache.
var jemallocBinLockers = []string{"tcache_alloc_small_hard", "arena_tcache_fill_small", "tcache_bin_flush_small", "arena_bin_malloc_hard", "arena_malloc_small"}
