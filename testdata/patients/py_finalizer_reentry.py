"""py_finalizer_reentry: a weakref.finalize callback that re-enters the
function whose threading.Lock its thread holds.

A collector (a tracer's, say) keeps the current span under a Lock;
activating a span replaces the current one, which drops the last
reference to the old span while the lock is held. The old span has a
weakref.finalize callback that activates a follow-up span: the callback
runs right there, inside the locked section, and waits for the lock its
own thread holds. The same shape as a __del__ method or a garbage
collection's finalizers re-entering a locked section.

Run with /usr/bin/python3. Prints main=<native tid>, then "ready" once
the main thread sleeps in its futex wait.

Stack (innermost first): futex <- sem_clockwait <-
PyThread_acquire_lock_timed <- ... <- Collector.activate (line of the
with) <- on_span_finish <- finalize.__call__ (weakref.py) <- ... <-
Collector.activate (the assignment that dropped the span) <- main.
"""

import sys
import threading
import weakref

from py_patient import blocked_in

FUTEX = 202  # x86-64 syscall number


class Span:
    def __init__(self, name):
        self.name = name


class Collector:
    def __init__(self):
        self.lock = threading.Lock()
        self.current = None

    def activate(self, span):
        with self.lock:
            self.current = span  # drops the previous span: its finalizer runs here, under the lock


collector = Collector()


def on_span_finish():
    collector.activate(Span("follow-up"))  # re-enters activate: waits for ever


def watch(main_tid):
    while not blocked_in(main_tid, FUTEX):
        threading.Event().wait(0.001)
    sys.stdout.write(f"main={main_tid}\nready\n")
    sys.stdout.flush()


def main():
    first = Span("first")
    weakref.finalize(first, on_span_finish)
    collector.activate(first)
    del first  # the collector holds the last reference
    threading.Thread(target=watch, args=(threading.get_native_id(),), daemon=True).start()
    collector.activate(Span("next"))


main()
