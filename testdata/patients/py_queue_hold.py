"""py_queue_hold: a lock held across a wait on a bounded queue.

The producer takes `lock` and, holding it, puts into a queue.Queue of
size 1: the second put waits in Condition.wait for room. The consumer
would make room, but asks for `lock` first and waits. threading's locks
record no owner; the frames say who waits how. The main thread joins at
interpreter exit (threading._shutdown).

Run with /usr/bin/python3. Prints "producer=<native id>" and
"consumer=<native id>" before "ready", once both sleep in a futex wait.

Expected stacks (Python frames, innermost first):
  producer: Condition.wait <- Queue.put <- produce <- Thread.run
  consumer: consume <- Thread.run (the acquire of `lock`, in C)
Expected verdict: lock-order-cycle (low) naming both: the producer most
likely holds the lock the consumer waits for.
"""

import queue
import sys
import threading
import time

from py_patient import blocked_in

FUTEX = 202  # x86-64 syscall number
lock = threading.Lock()
items = queue.Queue(maxsize=1)
tids = {}
started = threading.Event()


def produce():
    tids["producer"] = threading.get_native_id()
    with lock:
        items.put(1)
        started.set()
        items.put(2)  # for ever: the queue is full and its consumer waits for lock


def consume():
    tids["consumer"] = threading.get_native_id()
    started.wait()
    with lock:  # for ever: the producer holds it
        items.get()


def watch():
    quiet = 0
    while quiet < 20:
        time.sleep(0.001)
        if len(tids) == 2 and all(blocked_in(t, FUTEX) for t in tids.values()):
            quiet += 1
        else:
            quiet = 0
    sys.stdout.write(f"producer={tids['producer']}\nconsumer={tids['consumer']}\nready\n")
    sys.stdout.flush()


if __name__ == "__main__":
    threading.Thread(target=watch, name="watcher", daemon=True).start()
    threading.Thread(target=produce, name="producer").start()
    threading.Thread(target=consume, name="consumer").start()
