"""py_patient: what the Python patients share, as patient.h is for the C
ones: whether a thread sleeps in a system call, read from /proc (the
patients print "ready" only once their threads wait where they should).
"""


def blocked_in(tid, nr=None, pid="self"):
    """Thread tid of process pid (this one by default) sleeps (state S),
    inside system call nr unless nr is None. A parent may read its forked
    child's files."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        if nr is None:
            return state == "S"
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            got = f.read().split()[0]
    except (OSError, IndexError):
        return False
    return state == "S" and got == str(nr)
