"""py_logging_fork: a logging handler's stream lock held across the fork of
a multiprocessing worker (start method "fork").

What hangs on Python 3.11, and why this one: since 3.7.4/3.8 the logging
module re-initialises, in the child of os.fork(), its module lock and the
lock of every Handler (os.register_at_fork + Handler._at_fork_reinit), so
a bare Handler.acquire no longer hangs in the child. It does not
re-initialise the locks of what the handler writes to: a StreamHandler's
stream is an io.TextIOWrapper over a BufferedWriter, and the
BufferedWriter's own lock (Modules/_io/bufferedio.c, taken around every
write, kept while the raw write() blocks) is copied as it was. Here a
parent thread "logger" logs a record bigger than a pipe buffer to a pipe
nobody reads: it blocks in write() inside StreamHandler.emit, holding the
handler's lock and the stream's buffer lock. The main thread then starts
a multiprocessing worker with the fork start method; the worker logs
through the same handler: the handler lock is fresh, the buffer lock is
the parent's copy, held by a thread the child does not have. The worker
waits in emit's stream.write for ever; the parent waits in join().

Run with /usr/bin/python3. Prints owner=<logger's native tid>,
child=<worker pid>, then "ready" once the worker sleeps in its futex wait.
The worker gets SIGKILL when the parent dies (PR_SET_PDEATHSIG) and stays
in the patient's process group.

Stacks (innermost first):
  worker main: futex <- sem_clockwait <- PyThread_acquire_lock_timed <-
               (_enter_buffered_busy, _io_BufferedWriter_write) <- emit
               (logging/__init__.py) <- handle <- ... <- work
               (py_logging_fork.py) <- run, _bootstrap (multiprocessing/
               process.py) <- _launch (multiprocessing/popen_fork.py)
  parent logger: write <- _bufferedwriter_raw_write <- ... emit <- handle
               <- ... <- flood (py_logging_fork.py)
  parent main:  wait4 <- os.waitpid <- wait (popen_fork.py) <- join
"""

import ctypes
import logging
import multiprocessing
import os
import sys
import threading

FUTEX = 202  # x86-64 syscall number
WRITE = 1
PR_SET_PDEATHSIG = 1
SIGKILL = 9

prctl = ctypes.CDLL(None, use_errno=True).prctl
prctl.argtypes = [ctypes.c_int, ctypes.c_ulong]

# A pipe nobody reads: the handler's stream. The parent keeps the read
# end (a write to a pipe without readers fails instead of blocking).
sink_read_fd, sink_fd = os.pipe()
sink = open(sink_fd, "w", buffering=1 << 16)
handler = logging.StreamHandler(sink)
log = logging.getLogger("patient")
log.addHandler(handler)
log.setLevel(logging.INFO)
log.propagate = False


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


def flood():
    log.info("x" * (1 << 20))  # blocks in write(): the pipe is full


def work(parent):
    prctl(PR_SET_PDEATHSIG, SIGKILL)
    if os.getppid() != parent:
        os._exit(2)
    os.close(sink_read_fd)  # the parent's, not the worker's
    log.info("worker started")  # forever: the stream's lock is the parent's copy
    os._exit(0)


def main():
    t = threading.Thread(target=flood, name="logger", daemon=True)
    t.start()
    while t.native_id is None or not in_syscall(os.getpid(), t.native_id, WRITE):
        threading.Event().wait(0.001)
    owner = t.native_id

    ctx = multiprocessing.get_context("fork")
    worker = ctx.Process(target=work, args=(os.getpid(),), name="worker")
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
