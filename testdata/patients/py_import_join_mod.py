"""The module py_import_join.py imports: its top level starts a thread
that imports this module again, and joins it (see py_import_join.py)."""

import sys
import threading
import time

from py_patient import blocked_in

FUTEX = 202  # x86-64 syscall number
tids = {"main": threading.get_native_id()}


def run():
    tids["importer"] = threading.get_native_id()
    import py_import_join_mod  # noqa: F401  waits for main's import, for ever


def watch():
    quiet = 0
    while quiet < 20:
        time.sleep(0.001)
        if len(tids) == 2 and blocked_in(tids["main"], FUTEX) and blocked_in(tids["importer"], FUTEX):
            quiet += 1
        else:
            quiet = 0
    sys.stdout.write(f"main={tids['main']}\nimporter={tids['importer']}\nready\n")
    sys.stdout.flush()


threading.Thread(target=watch, name="watcher", daemon=True).start()
importer = threading.Thread(target=run, name="importer", daemon=True)
importer.start()
importer.join()  # for ever: the importer waits for this import to end
