/* py_embed: a C program that embeds CPython through libpython3.x.so (the
 * interpreter is not the executable) and runs Python code, compiled as
 * "embedded.py", whose main thread blocks in lock.acquire() on line 22
 * of that code. A helper thread prints "ready" once main sleeps in the
 * futex wait.
 *
 * Build: gcc -I/usr/include/python3.11 py_embed.c -lpython3.11
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>

static const char code[] =
    "import sys, threading, time\n"                                   /* 1 */
    "lock = threading.Lock()\n"                                       /* 2 */
    "main_tid = threading.get_native_id()\n"                          /* 3 */
    "\n"                                                              /* 4 */
    "def blocked(tid):\n"                                             /* 5 */
    "    try:\n"                                                      /* 6 */
    "        with open(f'/proc/self/task/{tid}/stat') as f:\n"        /* 7 */
    "            st = f.read().rsplit(')', 1)[1].split()[0]\n"        /* 8 */
    "        with open(f'/proc/self/task/{tid}/syscall') as f:\n"     /* 9 */
    "            nr = f.read().split()[0]\n"                          /* 10 */
    "    except (OSError, IndexError):\n"                             /* 11 */
    "        return False\n"                                          /* 12 */
    "    return st == 'S' and nr == '202'\n"                          /* 13 */
    "\n"                                                              /* 14 */
    "def announce():\n"                                               /* 15 */
    "    while not blocked(main_tid):\n"                              /* 16 */
    "        time.sleep(0.001)\n"                                     /* 17 */
    "    sys.stdout.write('ready\\n'); sys.stdout.flush()\n"          /* 18 */
    "\n"                                                              /* 19 */
    "def block():\n"                                                  /* 20 */
    "    lock.acquire()\n"                                            /* 21 */
    "    lock.acquire()  # BLOCK embedded\n"                          /* 22 */
    "\n"                                                              /* 23 */
    "threading.Thread(target=announce, daemon=True).start()\n"        /* 24 */
    "block()\n";                                                      /* 25 */

int main(void) {
	Py_Initialize();
	PyObject *co = Py_CompileString(code, "embedded.py", Py_file_input);
	if (co == NULL) {
		PyErr_Print();
		return 1;
	}
	PyObject *globals = PyDict_New();
	PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
	PyObject *res = PyEval_EvalCode(co, globals, globals);
	if (res == NULL)
		PyErr_Print();
	return 1;
}
