/* py_gilext: a CPython extension module for the py_gilext.py patient: a
 * native mutex and the GIL taken in opposite orders.
 *
 * hold_then_regain() (thread "regainer") releases the GIL
 * (Py_BEGIN_ALLOW_THREADS), locks ext_mutex, waits until the main thread
 * sleeps in lock(), then takes the GIL back (Py_END_ALLOW_THREADS ->
 * PyEval_RestoreThread -> take_gil) still holding ext_mutex.
 * lock() (the main thread) holds the GIL and locks ext_mutex without
 * releasing it. Each waits for what the other holds: a GIL deadlock.
 *
 * watch() starts a native thread (it never touches Python: it cannot, the
 * GIL is taken) that prints, once both threads sleep in futex waits:
 *   owner=<tid of regainer, the mutex owner>
 *   waiter=<tid of main, the GIL holder>
 *   ready
 *
 * regain_held() (py_gil_reacquire.py) is the other patient's: the main
 * thread takes back the GIL it holds.
 *
 * Built by the test: gcc -shared -fPIC $(python3-config --includes).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static pthread_mutex_t ext_mutex = PTHREAD_MUTEX_INITIALIZER;
static volatile int regainer_tid, main_tid, regainer_has_mutex, main_entering;

static void nap(long ns) {
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

/* in_futex: thread tid of this process sleeps (state S) in a futex wait. */
static int in_futex(int tid) {
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p || p[2] != 'S')
		return 0;
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	return strncmp(buf, "202 ", 4) == 0; /* x86-64 futex */
}

static PyObject *hold_then_regain(PyObject *self, PyObject *unused) {
	Py_BEGIN_ALLOW_THREADS
	pthread_mutex_lock(&ext_mutex);
	regainer_tid = (int)syscall(SYS_gettid);
	__atomic_store_n(&regainer_has_mutex, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&main_entering, __ATOMIC_SEQ_CST) || !in_futex(main_tid))
		nap(1000000);
	Py_END_ALLOW_THREADS /* take_gil: main holds the GIL and waits for ext_mutex */
	pthread_mutex_unlock(&ext_mutex);
	Py_RETURN_NONE;
}

static PyObject *has_mutex(PyObject *self, PyObject *unused) {
	return PyBool_FromLong(__atomic_load_n(&regainer_has_mutex, __ATOMIC_SEQ_CST));
}

static PyObject *lock(PyObject *self, PyObject *unused) {
	main_tid = (int)syscall(SYS_gettid);
	__atomic_store_n(&main_entering, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&ext_mutex); /* forever, holding the GIL */
	pthread_mutex_unlock(&ext_mutex);
	Py_RETURN_NONE;
}

/* regain_held(): takes the GIL back without having released it, as a
 * binding that lost track of its thread state does (pybind11's
 * gil_scoped_acquire on Python 3.7 with a pybind11 older than 2.2.4):
 * take_gil waits for the GIL this very thread holds. CPython 3.11 waits
 * for ever; 3.13 aborts ("non-NULL old thread state") before it waits. */
static PyObject *regain_held(PyObject *self, PyObject *unused) {
	main_tid = (int)syscall(SYS_gettid);
	__atomic_store_n(&main_entering, 1, __ATOMIC_SEQ_CST);
	PyEval_RestoreThread(PyThreadState_Get()); /* forever */
	Py_RETURN_NONE;
}

/* self_watcher prints the waiter once it is seen asleep a few times in a
 * row (take_gil wakes every switch interval). */
static void *self_watcher(void *arg) {
	for (int seen = 0; seen < 5;) {
		nap(10000000);
		if (main_tid && in_futex(main_tid))
			seen++;
		else
			seen = 0;
	}
	char out[64];
	int n = snprintf(out, sizeof out, "waiter=%d\nready\n", main_tid);
	if (write(1, out, n) < 0)
		_exit(3);
	return NULL;
}

static PyObject *watch_self(PyObject *self, PyObject *unused) {
	pthread_t t;
	if (pthread_create(&t, NULL, self_watcher, NULL) != 0)
		return PyErr_SetFromErrno(PyExc_OSError);
	pthread_detach(t);
	Py_RETURN_NONE;
}

static void *watcher(void *arg) {
	/* take_gil wakes every 5 ms (the switch interval) to ask for the GIL:
	 * both must be seen asleep a few times in a row. */
	for (int seen = 0; seen < 5;) {
		nap(10000000);
		if (main_tid && regainer_tid && in_futex(main_tid) && in_futex(regainer_tid))
			seen++;
		else
			seen = 0;
	}
	char out[128];
	int n = snprintf(out, sizeof out, "owner=%d\nwaiter=%d\nready\n", regainer_tid, main_tid);
	if (write(1, out, n) < 0)
		_exit(3);
	return NULL;
}

static PyObject *watch(PyObject *self, PyObject *unused) {
	pthread_t t;
	if (pthread_create(&t, NULL, watcher, NULL) != 0)
		return PyErr_SetFromErrno(PyExc_OSError);
	pthread_detach(t);
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
	{"hold_then_regain", hold_then_regain, METH_NOARGS, "release the GIL, lock ext_mutex, take the GIL back holding it"},
	{"has_mutex", has_mutex, METH_NOARGS, "whether hold_then_regain holds ext_mutex"},
	{"lock", lock, METH_NOARGS, "lock ext_mutex holding the GIL"},
	{"watch", watch, METH_NOARGS, "print ready once both threads sleep"},
	{"regain_held", regain_held, METH_NOARGS, "take the GIL back while holding it"},
	{"watch_self", watch_self, METH_NOARGS, "print ready once the regain_held thread sleeps"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "py_gilext", NULL, -1, methods};

PyMODINIT_FUNC PyInit_py_gilext(void) { return PyModule_Create(&module); }
