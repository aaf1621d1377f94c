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

FUTEX = 202  # x86-64 syscall number

lock = threading.Lock()
held = threading.Event()


def main_blocked(tid):
    """main sleeps (state S) inside a futex syscall."""
    try:
        with open(f"/proc/self/task/{tid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/self/task/{tid}/syscall") as f:
            nr = f.read().split()[0]
    except (OSError, IndexError):
        return False
    return state == "S" and nr == str(FUTEX)


def holder(main_tid):
    lock.acquire()
    held.set()
    while not main_blocked(main_tid):
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
