"""py_stacks: Python threads blocked at known lines, several evaluator
calls deep, to compare hangdoc's Python stacks with the interpreter's own
view: faulthandler dumps every thread's stack on stderr at SIGUSR1.

Threads (each line marked "# BLOCK <name>" is where one blocks):
  MainThread  main -> wait_forever -> Event.wait
  locker      locker_main -> map() (a C call back into Python: a second
              _PyEval_EvalFrameDefault) -> take -> Lock.acquire of a
              lock main holds
  sleeper     Sleeper.run -> Sleeper.nap -> time.sleep
  queued      queued_main -> recurse x12 -> queue.Queue.get
Each thread prints "thread <name> tid=<native id> ident=<ident>" before
it blocks; "ready" comes once every other thread sleeps in the kernel.
"""

import faulthandler
import os
import queue
import signal
import sys
import threading
import time

from py_patient import blocked_in

faulthandler.register(signal.SIGUSR1, all_threads=True)

held = threading.Lock()
held.acquire()
started = []
print_lock = threading.Lock()


def announce(name):
    with print_lock:
        sys.stdout.write(f"thread {name} tid={threading.get_native_id()} ident={threading.get_ident()}\n")
        sys.stdout.flush()
        started.append(threading.get_native_id())


def take(_):
    held.acquire()  # BLOCK locker


def locker_main():
    announce("locker")
    list(map(take, [1]))


class Sleeper(threading.Thread):
    def nap(self):
        time.sleep(3600)  # BLOCK sleeper

    def run(self):
        announce("sleeper")
        self.nap()


def recurse(n, q):
    if n == 0:
        return q.get()  # BLOCK queued
    return recurse(n - 1, q)


def queued_main():
    announce("queued")
    recurse(12, queue.Queue())


def wait_forever():
    threading.Event().wait()  # BLOCK main


def main():
    announce("main")
    threads = [
        threading.Thread(target=locker_main, name="locker", daemon=True),
        Sleeper(name="sleeper", daemon=True),
        threading.Thread(target=queued_main, name="queued", daemon=True),
    ]
    for t in threads:
        t.start()
    while len(started) < 4 or not all(blocked_in(t) for t in started[1:]):
        time.sleep(0.005)
    time.sleep(0.05)  # let each settle into its final wait
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    wait_forever()


if __name__ == "__main__":
    main()
