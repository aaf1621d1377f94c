"""py_compute: a control. The main thread and a thread "cruncher" compute in
pure Python for ever (sums of squares over a moving window): the stacks
change and the CPU grows, nothing waits. hangdoc must call it progressing
and claim no deadlock. Prints cruncher=<native tid>, then "ready".
"""

import sys
import threading


def crunch(seed):
    total, i = 0, seed
    while True:
        total = (total + sum(k * k for k in range(i % 1000, i % 1000 + 500))) % 1000003
        i += 1


def main():
    t = threading.Thread(target=crunch, args=(7,), name="cruncher", daemon=True)
    t.start()
    while t.native_id is None:
        pass
    sys.stdout.write(f"cruncher={t.native_id}\nready\n")
    sys.stdout.flush()
    crunch(1)


if __name__ == "__main__":
    main()
