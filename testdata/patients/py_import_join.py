"""py_import_join: a deadlock through the import machinery.

The script imports py_import_join_mod, whose top-level code starts a
thread "importer" and joins it. The importer imports py_import_join_mod
itself: the module is still being imported by the main thread, which
holds its module lock (importlib's _ModuleLock) until the top level ends,
so the importer waits in _ModuleLock.acquire, and main waits in
Thread.join for the importer. Python's _DeadlockError check sees cycles
of module locks only, not this one.

Run with /usr/bin/python3. A watcher thread prints "main=<native id>" and
"importer=<native id>" before "ready", once both sleep in a futex wait,
and exits, so only the two deadlocked threads are left.

Expected stacks (Python frames, innermost first):
  importer: _ModuleLock.acquire <- _lock_unlock_module <- run (this
            module's importer) <- Thread.run
  main:     Thread._wait_for_tstate_lock <- Thread.join <- <module>
            (py_import_join_mod.py) <- _call_with_frames_removed <-
            exec_module <- _load_unlocked <- ... <- <module> (this script)
Expected verdict: lock-order-cycle naming both threads.
"""

import py_import_join_mod  # noqa: F401  (for ever)
