"""py_pool_starvation: a thread pool that waits on itself.

A ThreadPoolExecutor with one worker runs outer(), which submits inner()
to the same pool and waits for its result: the only worker is busy
waiting, so inner() never runs. The main thread waits for outer()'s
result. Nothing runs; every worker of the pool waits for a future.

Run with /usr/bin/python3. Prints "worker=<native id>" and
"main=<native id>" before "ready", once both sleep in a futex wait.

Expected stacks (Python frames, innermost first):
  worker: Condition.wait <- Future.result <- outer <- _WorkItem.run <-
          _worker <- Thread.run
  main:   Condition.wait <- Future.result <- main <- <module>
Expected verdict: self-deadlock (thread-pool starvation) naming the worker.
"""

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from py_patient import blocked_in

FUTEX = 202  # x86-64 syscall number
pool = ThreadPoolExecutor(max_workers=1)
tids = {"main": threading.get_native_id()}


def inner():
    return 1


def outer():
    tids["worker"] = threading.get_native_id()
    return pool.submit(inner).result()  # for ever: the only worker is this one


def watch():
    quiet = 0
    while quiet < 20:
        time.sleep(0.001)
        if len(tids) == 2 and blocked_in(tids["main"], FUTEX) and blocked_in(tids["worker"], FUTEX):
            quiet += 1
        else:
            quiet = 0
    sys.stdout.write(f"worker={tids['worker']}\nmain={tids['main']}\nready\n")
    sys.stdout.flush()


def main():
    threading.Thread(target=watch, name="watcher", daemon=True).start()
    pool.submit(outer).result()  # for ever


if __name__ == "__main__":
    main()
