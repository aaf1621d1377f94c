"""py_numpy_fork: numpy matrix products in a child forked after the parent's
threads ran matrix products (the OpenBLAS-after-fork pattern).

The parent runs two threads "blas0" and "blas1" that each compute a matmul
(BLAS releases the GIL: they run at once), then park on an Event; the main
thread forks a child that computes matmuls in a loop.

Whether the child hangs depends on the BLAS numpy is linked to, not on
numpy:
  - OpenBLAS 0.3.30 (pthreads build): exec_blas_async re-locks server_lock
    in blas_thread_init after fork; the child's first threaded call waits
    for itself (the openblas-fork-relock known issue).
  - Debian bookworm's python3-numpy (1.24.2) links libblas.so.3, which is
    the reference BLAS (libblas3: no threads at all) unless libopenblas0-*
    is installed; bookworm's OpenBLAS is 0.3.21, whose pthread_atfork
    handler shuts its thread pool down before the fork. Either way the
    child computes: that is what this patient does on the test machines.
The parent tells which: it prints child=<pid>, blas=<libblas path numpy
mapped>, then child_state=computing once the child finished a product (it
then keeps computing), or child_state=stuck when the child sleeps in a
futex wait without finishing one for 2 s; then "ready". The child gets
SIGKILL when the parent dies and stays in the patient's process group.
"""

import ctypes
import os
import select
import sys
import threading

import numpy as np

from py_patient import blocked_in

FUTEX = 202  # x86-64 syscall number
PR_SET_PDEATHSIG = 1
SIGKILL = 9

prctl = ctypes.CDLL(None, use_errno=True).prctl
prctl.argtypes = [ctypes.c_int, ctypes.c_ulong]
N = 200


def blas_library():
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            base = os.path.basename(path)
            if "blas" in base and ".so" in base:
                return path
    return "none"


def blas_thread(done, park):
    a = np.ones((N, N))
    a @ a
    done.release()
    park.wait()  # alive at the fork: the parent is multi-threaded


def child_main(parent, report_fd):
    prctl(PR_SET_PDEATHSIG, SIGKILL)
    if os.getppid() != parent:
        os._exit(2)
    a = np.ones((N, N))
    told = False
    while True:
        c = a @ a  # the matmul in the forked child
        if not told:
            os.write(report_fd, b"x")
            told = True
        a = c / c.max()


def main():
    done, park = threading.Semaphore(0), threading.Event()
    threads = [threading.Thread(target=blas_thread, args=(done, park), name=f"blas{i}", daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for _ in threads:
        done.acquire()
    rd, wr = os.pipe()
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        os.close(rd)
        child_main(parent, wr)
    os.close(wr)
    sys.stdout.write(f"child={child}\nblas={blas_library()}\n")
    sys.stdout.flush()
    state, asleep = "", 0
    while not state:
        ready, _, _ = select.select([rd], [], [], 0.01)
        if ready:
            state = "computing" if os.read(rd, 1) else "exited"
        elif blocked_in(child, FUTEX, child):
            asleep += 1
            if asleep >= 200:
                state = "stuck"
        else:
            asleep = 0
    sys.stdout.write(f"child_state={state}\nready\n")
    sys.stdout.flush()
    os.waitpid(child, 0)  # forever: it computes, or it hangs


if __name__ == "__main__":
    main()
