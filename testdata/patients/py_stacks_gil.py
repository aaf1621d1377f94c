"""py_stacks_gil: the main thread holds the GIL for good, spinning in pure
Python with a switch interval of 1000 s, so the GIL is never asked back;
threads "w1" and "w2" return from time.sleep and wait for the GIL in
take_gil for ever.

Prints "thread <name> tid=<native id>" for each thread, then "ready"
just before main starts spinning: the waiters reach take_gil within
0.3 s after that (the test waits until both sleep in the kernel).
"""

import sys
import threading
import time


def waiter(name):
    with lock:
        sys.stdout.write(f"thread {name} tid={threading.get_native_id()}\n")
        sys.stdout.flush()
    time.sleep(0.3)  # BLOCK waiter: returns into take_gil
    sys.exit(1)  # never: main never gives the GIL back


def spin():
    n = 0
    while True:
        n += 1  # BLOCK spin


lock = threading.Lock()


def main():
    sys.stdout.write(f"thread main tid={threading.get_native_id()}\n")
    ws = [threading.Thread(target=waiter, args=(n,), name=n, daemon=True) for n in ("w1", "w2")]
    for w in ws:
        w.start()
    time.sleep(0.05)
    sys.setswitchinterval(1000)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    spin()


if __name__ == "__main__":
    main()
