"""pyfork_lock: a Python threading.Lock held by a thread across os.fork().

Thread "holder" takes `lock` and keeps it (it waits on an Event nobody
sets). The main thread then calls os.fork(). The child gets a copy of the
lock, locked, and no holder thread; it calls lock.acquire() and blocks for
ever. The parent waits in os.waitpid for ever.

Run with /usr/bin/python3. Prints, before "ready":
  owner=<native id of holder in the parent>
  child=<pid of the child>
"ready" comes once the child's only thread sleeps in the futex wait of
the acquire. The child gets SIGKILL when the parent dies (prctl
PR_SET_PDEATHSIG) and stays in the patient's process group.

Native stacks (innermost first):
  child main:  futex wait <- do_futex_wait / sem_clockwait <-
               PyThread_acquire_lock_timed <- lock_PyThread_acquire_lock <-
               ... _PyEval_EvalFrameDefault ... (Py_RunMain)
  parent holder: futex wait <- ... PyThread_acquire_lock_timed (Event.wait)
  parent main: wait4 <- os_waitpid ...
A Python lock is a semaphore: it records no owner, so only the fork
lineage (a forked child whose parent had two threads) and the frames
speak. The Python-aware verdict comes with a later issue.
"""

import ctypes
import os
import sys
import threading

from py_patient import blocked_in

FUTEX = 202  # x86-64 syscall number
PR_SET_PDEATHSIG = 1
SIGKILL = 9

lock = threading.Lock()
held = threading.Event()
# Looked up before the fork: the child must not need the loader.
prctl = ctypes.CDLL(None, use_errno=True).prctl
prctl.argtypes = [ctypes.c_int, ctypes.c_ulong]


def holder():
    lock.acquire()
    held.set()
    threading.Event().wait()  # forever, holding lock


def child_main(parent):
    prctl(PR_SET_PDEATHSIG, SIGKILL)
    if os.getppid() != parent:
        os._exit(2)
    lock.acquire()  # forever: the holder is not in this process
    os._exit(0)


def main():
    t = threading.Thread(target=holder, name="holder", daemon=True)
    t.start()
    held.wait()
    owner = t.native_id
    # holder is asleep in Event.wait, holding lock
    while not blocked_in(owner, FUTEX, os.getpid()):
        threading.Event().wait(0.001)

    parent = os.getpid()
    child = os.fork()
    if child == 0:
        child_main(parent)
    sys.stdout.write(f"owner={owner}\nchild={child}\n")
    sys.stdout.flush()
    while not blocked_in(child, FUTEX, child):
        pid, _ = os.waitpid(child, os.WNOHANG)
        if pid == child:
            sys.stderr.write(f"patient: child {child} exited before it hung\n")
            sys.exit(2)
        threading.Event().wait(0.001)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    os.waitpid(child, 0)  # forever


if __name__ == "__main__":
    main()
