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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* x86-64 syscall numbers a patient waits in (arm64 differs; the check
 * below accepts any syscall when PATIENT_ANY_SYSCALL is passed). */
#define PATIENT_SYS_READ 0
#define PATIENT_SYS_FUTEX 202
#define PATIENT_SYS_CLOCK_NANOSLEEP 230
#define PATIENT_SYS_PAUSE 34
#define PATIENT_SYS_RT_SIGSUSPEND 130
#define PATIENT_ANY_SYSCALL (-1)

#define PATIENT_NOINLINE __attribute__((noinline, noclone))
#define PATIENT_FN static __attribute__((unused))

PATIENT_FN pid_t patient_gettid(void) { return (pid_t)syscall(SYS_gettid); }

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

/* patient_blocked_in says whether thread tid sleeps (state S) inside
 * syscall nr (or any syscall when nr is PATIENT_ANY_SYSCALL). */
PATIENT_FN int patient_blocked_in(pid_t tid, int nr)
{
	char path[64], buf[256];
	int fd, n;
	char *p;

	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = (int)read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	if (p == NULL || p[1] != ' ' || p[2] != 'S')
		return 0;

	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = (int)read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (buf[0] < '0' || buf[0] > '9') /* "running" or "-1 …" */
		return 0;
	return nr == PATIENT_ANY_SYSCALL || atoi(buf) == nr;
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

#endif
