"""py_gil_reacquire: a thread takes back the GIL it holds (py_gilext.c's
regain_held), as a C++ binding does when it lost track of its thread
state: pybind11's gil_scoped_acquire on Python 3.7 with a pybind11 older
than 2.2.4 (pytorch/pytorch#11419) called PyEval_AcquireThread on a
thread that held the GIL. take_gil waits for the GIL's holder to drop
it, and the holder is the waiter.

Run: /usr/bin/python3 py_gil_reacquire.py DIR, DIR holding the
py_gilext.*.so built from py_gilext.c. Prints waiter=<main tid>, then
"ready" (from a native thread of the extension). CPython 3.11 hangs;
3.13 aborts instead ("non-NULL old thread state").

Stack (innermost first): futex <- pthread_cond_timedwait <- take_gil <-
PyEval_RestoreThread <- regain_held (py_gilext.so) <- ... main
(py_gil_reacquire.py, the ext.regain_held() line).
"""

import sys

sys.path.insert(0, sys.argv[1])
import py_gilext as ext  # noqa: E402


def main():
    ext.watch_self()
    ext.regain_held()  # forever: this thread holds the GIL it waits for


if __name__ == "__main__":
    main()
