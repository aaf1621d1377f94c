"""lock: a Python patient. Thread "holder" takes a threading.Lock and keeps
it; the main thread blocks acquiring it. Once main sleeps in the futex wait
under Lock.acquire, holder prints "ready" and waits on an Event nobody sets.

Run with /usr/bin/python3. Native stacks (what hangdoc and gdb see):
  main:   futex wait <- sem_clockwait/do_futex_wait <- PyThread_acquire_lock_timed
          <- lock_PyThread_acquire_lock <- ... _PyEval_EvalFrameDefault ...
  holder: futex wait <- ... PyThread_acquire_lock_timed (Event.wait's waiter lock)
"""

import os
import sys
import threading
import time

from py_patient import blocked_in

FUTEX = 202  # x86-64 syscall number

lock = threading.Lock()
held = threading.Event()


def holder(main_tid):
    lock.acquire()
    held.set()
    while not blocked_in(main_tid, FUTEX):
        time.sleep(0.001)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    threading.Event().wait()  # forever


def main():
    t = threading.Thread(target=holder, args=(threading.get_native_id(),), name="holder", daemon=True)
    t.start()
    held.wait()
    lock.acquire()  # forever: holder never releases


if __name__ == "__main__":
    main()
