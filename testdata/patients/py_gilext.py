"""py_gilext: a GIL deadlock through a C extension (py_gilext.c).

Thread "regainer" runs ext.hold_then_regain(): it releases the GIL, locks
the extension's native mutex, then takes the GIL back while holding it.
The main thread, holding the GIL, calls ext.lock(), which locks the same
mutex without releasing the GIL. main waits for the mutex (owned by
regainer), regainer waits for the GIL (held by main): neither moves.

Run: /usr/bin/python3 py_gilext.py DIR, DIR holding py_gilext.*.so built
from py_gilext.c. Prints owner=<regainer tid>, waiter=<main tid>, then
"ready" (from a native thread of the extension: no Python runs any more).

Stacks (innermost first):
  main:     futex <- __lll_lock_wait <- pthread_mutex_lock <- lock (py_gilext.so)
            <- ... main (py_gilext.py, the ext.lock() line)
  regainer: futex <- pthread_cond_timedwait <- take_gil <- PyEval_RestoreThread
            <- hold_then_regain (py_gilext.so) <- ... run (threading.py)
"""

import sys
import threading
import time

sys.path.insert(0, sys.argv[1])
import py_gilext as ext  # noqa: E402


def main():
    t = threading.Thread(target=ext.hold_then_regain, name="regainer", daemon=True)
    t.start()
    while not ext.has_mutex():
        time.sleep(0.001)
    ext.watch()
    ext.lock()  # forever: regainer holds the mutex and waits for our GIL


if __name__ == "__main__":
    main()
