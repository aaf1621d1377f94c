/*
 * patient.h: helpers shared by hangdoc's C and C++ patients.
 *
 * A patient is a small program that hangs in one known way. It prints the
 * line "ready" on stdout once every thread is in its final blocked state,
 * then hangs until the test kills its process group. The helpers here
 * only read /proc/self (a process may always read its own threads'
 * syscall files) and never depend on timing.
 */
#ifndef HANGDOC_PATIENT_H
#define HANGDOC_PATIENT_H

/* Include this header first: it asks glibc for the GNU extensions. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PATIENT_ANY_SYSCALL (-1)
#if defined(__x86_64__)
/* x86-64 syscall numbers a patient waits in. */
#define PATIENT_SYS_READ 0
#define PATIENT_SYS_WRITE 1
#define PATIENT_SYS_FUTEX 202
#ifdef __GLIBC__
#define PATIENT_SYS_CLOCK_NANOSLEEP 230
#else
#define PATIENT_SYS_CLOCK_NANOSLEEP 35 /* musl's nanosleep calls SYS_nanosleep */
#endif
#define PATIENT_SYS_PAUSE 34
#define PATIENT_SYS_RT_SIGSUSPEND 130
#define PATIENT_SYS_RECVFROM 45
#define PATIENT_SYS_WAIT4 61
#define PATIENT_SYS_FLOCK 73
#else
/* Elsewhere (arm64 under qemu-user, where /proc shows the host's
 * syscalls, not the guest's) a patient only checks that the thread
 * sleeps in some syscall. */
#define PATIENT_SYS_READ PATIENT_ANY_SYSCALL
#define PATIENT_SYS_WRITE PATIENT_ANY_SYSCALL
#define PATIENT_SYS_FUTEX PATIENT_ANY_SYSCALL
#define PATIENT_SYS_CLOCK_NANOSLEEP PATIENT_ANY_SYSCALL
#define PATIENT_SYS_PAUSE PATIENT_ANY_SYSCALL
#define PATIENT_SYS_RT_SIGSUSPEND PATIENT_ANY_SYSCALL
#define PATIENT_SYS_RECVFROM PATIENT_ANY_SYSCALL
#define PATIENT_SYS_WAIT4 PATIENT_ANY_SYSCALL
#define PATIENT_SYS_FLOCK PATIENT_ANY_SYSCALL
#endif

#define PATIENT_NOINLINE __attribute__((noinline, noclone))
#define PATIENT_FN static __attribute__((unused))

PATIENT_FN pid_t patient_gettid(void) { return (pid_t)syscall(SYS_gettid); }

/* patient_mutex_contended says whether a default mutex is locked with a
 * waiter asleep on it, read from the libc's own lock word: glibc's
 * __lock (+0) is 2; musl's _m_lock (+4) has its waiter bit (31) set. */
PATIENT_FN int patient_mutex_contended(void *m)
{
#ifdef __GLIBC__
	return __atomic_load_n((int *)m, __ATOMIC_SEQ_CST) == 2;
#else
	return (__atomic_load_n((unsigned *)m + 1, __ATOMIC_SEQ_CST) & 0x80000000u) != 0;
#endif
}

/* patient_die reports a setup failure on stderr (the test shows it) and
 * exits: a patient that cannot reach its hang must not print "ready". */
PATIENT_FN void patient_die(const char *what)
{
	fprintf(stderr, "patient: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* patient_say writes one whole line to stdout with write(2): no stdio
 * buffer to flush, and usable from any thread. */
PATIENT_FN void patient_say(const char *line)
{
	size_t n = strlen(line), off = 0;
	while (off < n) {
		ssize_t w = write(1, line + off, n - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			_exit(3);
		}
		off += (size_t)w;
	}
}

PATIENT_FN void patient_ready(void) { patient_say("ready\n"); }

/* patient_sayf writes one formatted line ("child=1234\n") like patient_say. */
PATIENT_FN __attribute__((format(printf, 1, 2))) void patient_sayf(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	patient_say(buf);
}

/* patient_die_with_parent makes a forked child get SIGKILL when parent,
 * the process that forked it, dies: the test kills the process group, and
 * this covers a test binary that dies first (the parent then gets its
 * Pdeathsig). Call it first thing in the child; it takes no lock. */
PATIENT_FN void patient_die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		_exit(2);
	if (getppid() != parent) /* the parent died before the prctl */
		_exit(2);
}

/* patient_fork forks a child that gets SIGKILL when this process dies
 * (patient_die_with_parent); it returns as fork does, 0 in the child. */
PATIENT_FN pid_t patient_fork(void)
{
	pid_t parent = getpid();
	pid_t child = fork();
	if (child < 0)
		patient_die("fork");
	if (child == 0)
		patient_die_with_parent(parent);
	return child;
}

/* patient_task_read reads /proc file name of thread tid of process pid (0:
 * this process) into buf, NUL-terminated; its length, 0 when unreadable. */
PATIENT_FN int patient_task_read(pid_t pid, pid_t tid, const char *name, char *buf, int size)
{
	char path[64];
	int fd, n;

	if (pid == 0)
		snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, name);
	else
		snprintf(path, sizeof path, "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = (int)read(fd, buf, (size_t)size - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return n;
}

/* patient_task_blocked_in says whether thread tid of process pid (0: this
 * process) sleeps (state S) inside syscall nr (or any syscall when nr is
 * PATIENT_ANY_SYSCALL). A parent may read its forked child's files. */
PATIENT_FN int patient_task_blocked_in(pid_t pid, pid_t tid, int nr)
{
	char buf[256];
	char *p;

	if (patient_task_read(pid, tid, "stat", buf, sizeof buf) == 0)
		return 0;
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	if (p == NULL || p[1] != ' ' || p[2] != 'S')
		return 0;
	if (patient_task_read(pid, tid, "syscall", buf, sizeof buf) == 0)
		return 0;
	if (buf[0] < '0' || buf[0] > '9') /* "running" or "-1 …" */
		return 0;
	return nr == PATIENT_ANY_SYSCALL || atoi(buf) == nr;
}

/* patient_blocked_in says whether thread tid of this process sleeps
 * (state S) inside syscall nr (or any syscall when nr is
 * PATIENT_ANY_SYSCALL). */
PATIENT_FN int patient_blocked_in(pid_t tid, int nr)
{
	return patient_task_blocked_in(0, tid, nr);
}

/* patient_wait_blocked returns once every thread in tids sleeps in the
 * syscall given for it in nrs (nrs may be NULL: any syscall). */
PATIENT_FN void patient_wait_blocked(const pid_t *tids, const int *nrs, int n)
{
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < n; i++) {
		while (!patient_blocked_in(tids[i], nrs ? nrs[i] : PATIENT_ANY_SYSCALL))
			nanosleep(&ms, NULL);
	}
}

/* patient_wait_child_blocked returns once the main thread of the forked
 * child sleeps in syscall nr; it exits the patient (without "ready") if
 * the child exits first. */
PATIENT_FN void patient_wait_child_blocked(pid_t child, int nr)
{
	struct timespec ms = {0, 1000000};
	int status;
	while (!patient_task_blocked_in(child, child, nr)) {
		if (waitpid(child, &status, WNOHANG) == child) {
			fprintf(stderr, "patient: child %d exited (status 0x%x) before it hung\n", (int)child, status);
			exit(2);
		}
		nanosleep(&ms, NULL);
	}
}

/* patient_hang_on_child is the parent's part of a patient whose forked
 * child hangs: it prints "child=<pid>", waits until the child's main
 * thread sleeps in syscall nr, prints "ready" and waits in waitpid for
 * the child for ever. */
PATIENT_FN void patient_hang_on_child(pid_t child, int nr)
{
	int status;

	patient_sayf("child=%d\n", (int)child);
	patient_wait_child_blocked(child, nr);
	patient_ready();
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
}

#endif
