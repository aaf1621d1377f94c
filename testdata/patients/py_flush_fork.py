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
worker sleeps in its futex wait (py_fork_patient.fork_while_held). The
worker gets SIGKILL when the parent dies (PR_SET_PDEATHSIG).

Worker stack (innermost first): futex <- sem_clockwait <-
PyThread_acquire_lock_timed <- _enter_buffered_busy <- buffered_flush <-
flush_journal (py_flush_fork.py) <- run, _bootstrap (multiprocessing/
process.py) <- _launch (multiprocessing/popen_fork.py) <- ... <-
fork_while_held (py_fork_patient.py) <- main.
"""

import faulthandler
import os
import signal
import sys

from py_fork_patient import fork_while_held, worker_start

# A pipe nobody reads: the journal. The parent keeps the read end (a
# write to a pipe without readers fails instead of blocking).
sink_read_fd, sink_fd = os.pipe()
journal = open(sink_fd, "wb", buffering=1 << 16)


def fill():
    journal.write(b"x" * (1 << 20))  # blocks in write(): the pipe is full


def flush_journal(parent):
    worker_start(parent, sink_read_fd)
    journal.flush()  # forever: the buffer's lock is the parent's copy
    os._exit(0)


def main():
    dump = open(sys.argv[1], "w")
    faulthandler.register(signal.SIGUSR1, file=dump, all_threads=True)
    fork_while_held(fill, "writer", flush_journal)


if __name__ == "__main__":
    main()
