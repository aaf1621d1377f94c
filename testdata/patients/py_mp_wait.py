"""py_mp_wait: a parent waits on a worker process that never answers.

The main thread reads a multiprocessing Pipe (conn.recv, in
multiprocessing/connection.py) that the worker, a forked
multiprocessing.Process, was to write a result to; the worker sleeps
instead (a hung worker). A second thread of the parent waits on a
queue.Queue for what the main thread would hand on, as torch's
DataLoader pin-memory thread does. Attached alone, the parent shows no
deadlock of its own: hangdoc must say it waits on another process
(waiting-on-process, not a deadlock claim) and name the main thread.
Prints child=<pid>, main=<native id>, then "ready" once the main thread
is in recv.
"""

import multiprocessing
import queue
import sys
import threading
import time


def worker(conn):
    time.sleep(100000)  # never sends
    conn.send("result")


def main():
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=worker, args=(child,), daemon=True)
    p.start()
    handoff = queue.Queue()
    threading.Thread(target=handoff.get, name="consumer", daemon=True).start()
    sys.stdout.write(f"child={p.pid}\nmain={threading.main_thread().native_id}\nready\n")
    sys.stdout.flush()
    handoff.put(parent.recv())


if __name__ == "__main__":
    main()
