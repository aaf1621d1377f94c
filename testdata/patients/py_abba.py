"""py_abba: a lock-order inversion between two threading.Lock objects.

Thread "transfer-ab" holds lock_a and wants lock_b; thread "transfer-ba"
holds lock_b and wants lock_a. A threading.Barrier makes sure each holds
its first lock before either asks for its second. The main thread waits
in Thread.join.

Run with /usr/bin/python3. Prints "ab=<native id>" and "ba=<native id>"
before "ready", once both sleep in the futex wait of their second acquire.

Native stacks (innermost first), both threads:
  futex wait <- do_futex_wait / sem_clockwait <- PyThread_acquire_lock_timed
  <- lock_PyThread_acquire_lock <- ... _PyEval_EvalFrameDefault ...
A Python lock records no owner: expected verdict lock-order-cycle (from
the Python stacks: each thread waits in acquire at take_b_after_a /
take_a_after_b after taking the other lock) naming both threads.
"""

import sys
import threading
import time

from py_patient import blocked_in

FUTEX = 202  # x86-64 syscall number

lock_a = threading.Lock()
lock_b = threading.Lock()
both_hold = threading.Barrier(2)
tids = {}


def take_b_after_a():
    with lock_a:
        both_hold.wait()
        tids["ab"] = threading.get_native_id()
        with lock_b:  # for ever
            pass


def take_a_after_b():
    with lock_b:
        both_hold.wait()
        tids["ba"] = threading.get_native_id()
        with lock_a:  # for ever
            pass


def main():
    ab = threading.Thread(target=take_b_after_a, name="transfer-ab", daemon=True)
    ba = threading.Thread(target=take_a_after_b, name="transfer-ba", daemon=True)
    ab.start()
    ba.start()
    # A thread waiting for the GIL sleeps in a futex too: only a state
    # that lasts while main keeps letting the GIL go is the acquire's.
    quiet = 0
    while quiet < 20:
        time.sleep(0.001)
        if len(tids) == 2 and blocked_in(tids["ab"], FUTEX) and blocked_in(tids["ba"], FUTEX):
            quiet += 1
        else:
            quiet = 0
    sys.stdout.write(f"ab={tids['ab']}\nba={tids['ba']}\nready\n")
    sys.stdout.flush()
    ab.join()  # for ever


if __name__ == "__main__":
    main()
