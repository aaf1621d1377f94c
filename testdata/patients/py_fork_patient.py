"""py_fork_patient: what the Python fork patients share (py_logging_fork.py,
py_flush_fork.py): a parent thread blocks in write() on a pipe nobody
reads while it holds a lock, then the main thread forks a multiprocessing
worker (start method "fork") that asks for that lock, a copy held by a
thread the child does not have.

fork_while_held runs the patient's two halves: hold, in thread
hold_name, until it sleeps in write(); then work(parent_pid) in the
worker. It prints owner=<hold's native tid>, child=<worker pid>, then
"ready" once the worker sleeps in its futex wait, and joins the worker
for ever. worker_start is the worker's first step: it gets SIGKILL when
the parent dies (PR_SET_PDEATHSIG) and closes the parent's read end of
the pipe.
"""

import ctypes
import multiprocessing
import os
import sys
import threading

from py_patient import blocked_in

FUTEX = 202  # x86-64 syscall number
WRITE = 1
PR_SET_PDEATHSIG = 1
SIGKILL = 9

_prctl = ctypes.CDLL(None, use_errno=True).prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong]


def worker_start(parent, read_fd):
    """Dies with the parent; closes read_fd, the parent's end of the pipe."""
    _prctl(PR_SET_PDEATHSIG, SIGKILL)
    if os.getppid() != parent:
        os._exit(2)
    os.close(read_fd)


def fork_while_held(hold, hold_name, work):
    t = threading.Thread(target=hold, name=hold_name, daemon=True)
    t.start()
    while t.native_id is None or not blocked_in(t.native_id, WRITE, os.getpid()):
        threading.Event().wait(0.001)
    owner = t.native_id

    ctx = multiprocessing.get_context("fork")
    worker = ctx.Process(target=work, args=(os.getpid(),), name="worker")
    worker.start()
    child = worker.pid
    sys.stdout.write(f"owner={owner}\nchild={child}\n")
    sys.stdout.flush()
    while not blocked_in(child, FUTEX, child):
        if not worker.is_alive():
            sys.stderr.write(f"patient: worker {child} exited ({worker.exitcode}) before it hung\n")
            sys.exit(2)
        threading.Event().wait(0.001)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    worker.join()  # forever
