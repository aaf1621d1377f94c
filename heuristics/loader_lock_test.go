package heuristics

import (
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// main dlopen()s a plugin whose constructor takes registry_lock; the
// scanner holds registry_lock and walks the modules with
// dl_iterate_phdr, which waits for the loader's write lock.
func loaderDeadlock(ownersRead bool) *stacks.Snapshot {
	inLoader := thread(90, "main", mutexFrames("plugin_init", "call_init", "_dl_init", "dl_open_worker", "_dl_catch_exception",
		"_dl_open", "dlopen_doit", "_dl_catch_error", "_dlerror_run", "dlopen", "main")...)
	scanner := thread(91, "scanner", mutexFrames("__GI___dl_iterate_phdr", "_Unwind_Find_FDE", "scan_modules")...)
	if ownersRead {
		on(inLoader, named(lockWait(0x603000, 91, 0), "registry_lock"))
		on(scanner, named(lockWait(0x7f0000001a08, 90, kindRecursive), "_rtld_global+2568"))
		return live(proc(90, inLoader, scanner))
	}
	return pasted(proc(90, inLoader, scanner))
}

func TestLoaderLockCycle(t *testing.T) {
	snap := loaderDeadlock(true)
	d := one(t, "loader-lock", snap)
	complete(t, d)
	if d.Confidence != High {
		t.Errorf("confidence %s", d.Confidence)
	}
	has(t, "summary", d.Summary, "thread 90 `main` holds the loader lock inside `dlopen`", "`registry_lock` (0x603000) held by thread 91 `scanner`",
		"`_rtld_global+2568`", "held by thread 90 `main`")
	sameInts(t, "tids", d.Tids, 90, 91)
	// one verdict for the cycle
	none(t, "lock-order-cycle", snap)
	none(t, "self-deadlock", snap)
}

func TestLoaderLockByFrames(t *testing.T) {
	snap := loaderDeadlock(false)
	d := one(t, "loader-lock", snap)
	complete(t, d)
	if d.Confidence != Low {
		t.Errorf("confidence %s", d.Confidence)
	}
	has(t, "summary", d.Summary, "thread 90 `main` waits for a lock in", "`plugin_init`", "(`dlopen`)",
		"thread 91 `scanner` waits for the loader lock in `__dl_iterate_phdr`")
	none(t, "lock-order-cycle", snap)
}

func TestLoaderLockNot(t *testing.T) {
	// the thread in dl_iterate_phdr waits, but nobody is inside the loader
	none(t, "loader-lock", pasted(proc(1,
		thread(1, "scanner", mutexFrames("dl_iterate_phdr", "scan")...),
		thread(2, "worker", mutexFrames("do_work")...),
	)))
	// somebody runs: it may hold the lock and release it
	snap := loaderDeadlock(false)
	snap.Processes[0].Threads = append(snap.Processes[0].Threads, spinning(thread(92, "busy", "compute")))
	none(t, "loader-lock", snap)
}
