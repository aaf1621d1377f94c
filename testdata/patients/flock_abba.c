/*
 * flock_abba: two processes take two file locks (flock(2)) in opposite
 * orders. The parent forks "first" and "second"; first locks A, second
 * locks B; once both hold (pipes as a barrier), first asks for B and
 * second for A. flock never fails with EDEADLK (POSIX fcntl locks would:
 * the kernel checks their cycles), so both wait for ever. The parent
 * waits in waitpid for ever. Each child opens the files itself: a flock
 * belongs to an open file description, which a fork would share.
 *
 * Usage: flock_abba DIR (the lock files are DIR/a.lock and DIR/b.lock).
 * Prints "first=<pid>" and "second=<pid>" before "ready".
 *
 * Expected stacks: each child: flock ← take ← run ← main.
 * Expected verdict: waiting-on-process, the ring first ↔ second, each
 * blocked in flock for a lock the other holds (read from /proc/locks).
 */
#include "patient.h"

#include <sys/file.h>

static char path_a[4096], path_b[4096];

static PATIENT_NOINLINE void take(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		patient_die(path);
	if (flock(fd, LOCK_EX) != 0) /* the second call: for ever */
		patient_die("flock");
}

static PATIENT_NOINLINE void run(const char *mine, const char *theirs, int held, int go)
{
	char c = 'x';
	take(mine);
	if (write(held, &c, 1) != 1 || read(go, &c, 1) != 1)
		patient_die("barrier");
	take(theirs);
}

int main(int argc, char **argv)
{
	int held[2], go[2];
	pid_t kids[2];
	char c;

	if (argc != 2)
		patient_die("usage: flock_abba DIR");
	snprintf(path_a, sizeof path_a, "%s/a.lock", argv[1]);
	snprintf(path_b, sizeof path_b, "%s/b.lock", argv[1]);
	if (pipe(held) != 0 || pipe(go) != 0)
		patient_die("pipe");
	for (int i = 0; i < 2; i++) {
		kids[i] = patient_fork();
		if (kids[i] == 0) {
			run(i == 0 ? path_a : path_b, i == 0 ? path_b : path_a, held[1], go[0]);
			return 0;
		}
	}
	for (int i = 0; i < 2; i++)
		if (read(held[0], &c, 1) != 1)
			patient_die("barrier");
	if (write(go[1], "xx", 2) != 2)
		patient_die("barrier");
	for (int i = 0; i < 2; i++)
		patient_wait_child_blocked(kids[i], PATIENT_SYS_FLOCK);
	patient_sayf("first=%d\n", (int)kids[0]);
	patient_sayf("second=%d\n", (int)kids[1]);
	patient_ready();
	while (waitpid(kids[0], NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}
