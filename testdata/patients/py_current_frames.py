# a lock-order deadlock and the sys._current_frames() watchdog recipe
import sys, threading, time, traceback
a, b = threading.Lock(), threading.Lock()
def ab():
    with a:
        time.sleep(0.2)
        with b:
            pass
def ba():
    with b:
        time.sleep(0.2)
        with a:
            pass
t1 = threading.Thread(target=ab, name="ab"); t2 = threading.Thread(target=ba, name="ba")
t1.daemon = t2.daemon = True
t1.start(); t2.start()
time.sleep(1)
names = {t.ident: t.name for t in threading.enumerate()}
for ident, frame in sys._current_frames().items():
    print("# Thread: %s(%d)" % (names.get(ident, ""), ident))
    for filename, lineno, name, line in traceback.extract_stack(frame):
        print('File: "%s", line %d, in %s' % (filename, lineno, name))
        if line:
            print("  %s" % line.strip())
    print()
