"""py_flush_fork: a stream's buffer lock held across the fork of a
multiprocessing worker (start method "fork"), and the worker's flush of
that stream; the worker's Python stack as faulthandler prints it.

A parent thread "writer" writes a block bigger than a pipe buffer to a
buffered file over a pipe nobody reads: it blocks in write() holding the
BufferedWriter's lock (Modules/_io/bufferedio.c keeps it while the raw
write blocks). The main thread then starts a worker with the fork start
method; the worker flushes the same file: the buffer lock is the
parent's copy, held by a thread the child does not have, so the flush
waits for ever. Nothing is logged: this is the stream's own lock.

The parent registers faulthandler on SIGUSR1 before the fork, writing
to the file named by argv[1]; the child inherits the handler, so SIGUSR1
to the child prints the child's Python stack there (faulthandler runs in
the signal handler and needs no GIL).

Run with /usr/bin/python3 py_flush_fork.py DUMPFILE. Prints
owner=<writer's native tid>, child=<worker pid>, then "ready" once the
worker sleeps in its futex wait. The worker gets SIGKILL when the parent
dies (PR_SET_PDEATHSIG).

Worker stack (innermost first): futex <- sem_clockwait <-
PyThread_acquire_lock_timed <- _enter_buffered_busy <- buffered_flush <-
flush_journal (py_flush_fork.py) <- run, _bootstrap (multiprocessing/
process.py) <- _launch (multiprocessing/popen_fork.py) <- ... <- main.
"""

import ctypes
import faulthandler
import multiprocessing
import os
import signal
import sys
import threading

FUTEX = 202  # x86-64 syscall number
WRITE = 1
PR_SET_PDEATHSIG = 1
SIGKILL = 9

prctl = ctypes.CDLL(None, use_errno=True).prctl
prctl.argtypes = [ctypes.c_int, ctypes.c_ulong]

# A pipe nobody reads: the journal. The parent keeps the read end (a
# write to a pipe without readers fails instead of blocking).
sink_read_fd, sink_fd = os.pipe()
journal = open(sink_fd, "wb", buffering=1 << 16)


def in_syscall(pid, tid, nr):
    """Thread tid of process pid sleeps (state S) inside syscall nr."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            got = f.read().split()[0]
    except (OSError, IndexError):
        return False
    return state == "S" and got == str(nr)


def fill():
    journal.write(b"x" * (1 << 20))  # blocks in write(): the pipe is full


def flush_journal(parent):
    prctl(PR_SET_PDEATHSIG, SIGKILL)
    if os.getppid() != parent:
        os._exit(2)
    os.close(sink_read_fd)  # the parent's, not the worker's
    journal.flush()  # forever: the buffer's lock is the parent's copy
    os._exit(0)


def main():
    dump = open(sys.argv[1], "w")
    faulthandler.register(signal.SIGUSR1, file=dump, all_threads=True)
    t = threading.Thread(target=fill, name="writer", daemon=True)
    t.start()
    while t.native_id is None or not in_syscall(os.getpid(), t.native_id, WRITE):
        threading.Event().wait(0.001)
    owner = t.native_id

    ctx = multiprocessing.get_context("fork")
    worker = ctx.Process(target=flush_journal, args=(os.getpid(),), name="worker")
    worker.start()
    child = worker.pid
    sys.stdout.write(f"owner={owner}\nchild={child}\n")
    sys.stdout.flush()
    while not in_syscall(child, child, FUTEX):
        if not worker.is_alive():
            sys.stderr.write(f"patient: worker {child} exited ({worker.exitcode}) before it hung\n")
            sys.exit(2)
        threading.Event().wait(0.001)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    worker.join()  # forever


if __name__ == "__main__":
    main()
