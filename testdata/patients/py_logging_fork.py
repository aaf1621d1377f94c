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
child=<worker pid>, then "ready" once the worker sleeps in its futex wait
(py_fork_patient.fork_while_held). The worker gets SIGKILL when the
parent dies (PR_SET_PDEATHSIG) and stays in the patient's process group.

Stacks (innermost first):
  worker main: futex <- sem_clockwait <- PyThread_acquire_lock_timed <-
               (_enter_buffered_busy, _io_BufferedWriter_write) <- emit
               (logging/__init__.py) <- handle <- ... <- work
               (py_logging_fork.py) <- run, _bootstrap (multiprocessing/
               process.py) <- _launch (multiprocessing/popen_fork.py) <-
               ... <- fork_while_held (py_fork_patient.py) <- main
  parent logger: write <- _bufferedwriter_raw_write <- ... emit <- handle
               <- ... <- flood (py_logging_fork.py)
  parent main:  wait4 <- os.waitpid <- wait (popen_fork.py) <- join <-
               fork_while_held (py_fork_patient.py) <- main
"""

import logging
import os

from py_fork_patient import fork_while_held, worker_start

# A pipe nobody reads: the handler's stream. The parent keeps the read
# end (a write to a pipe without readers fails instead of blocking).
sink_read_fd, sink_fd = os.pipe()
sink = open(sink_fd, "w", buffering=1 << 16)
handler = logging.StreamHandler(sink)
log = logging.getLogger("patient")
log.addHandler(handler)
log.setLevel(logging.INFO)
log.propagate = False


def flood():
    log.info("x" * (1 << 20))  # blocks in write(): the pipe is full


def work(parent):
    worker_start(parent, sink_read_fd)
    log.info("worker started")  # forever: the stream's lock is the parent's copy
    os._exit(0)


def main():
    fork_while_held(flood, "logger", work)


if __name__ == "__main__":
    main()
