// The main thread spins in spin() until SIGALRM arrives; the handler
// says "ready" and blocks on a pipe, so the stack crosses __restore_rt:
// read ← handler_block ← handler ← <signal> ← spin ← spin_outer ← main.
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int fds[2];
volatile unsigned long counter;
volatile int sink;

NOINLINE void handler_block(void) {
	char b;
	if (read(fds[0], &b, 1) > 0)
		sink++;
	sink++;
}
static void handler(int sig) {
	(void)sig;
	if (write(1, "ready\n", 6) != 6)
		sink++;
	handler_block();
	sink++;
}
NOINLINE void spin(void) {
	for (;;)
		counter++;
}
NOINLINE void spin_outer(void) { spin(); sink++; }

int main(void) {
	struct sigaction sa;
	if (pipe(fds) != 0)
		return 1;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigaction(SIGALRM, &sa, NULL);
	ualarm(50000, 0);
	spin_outer();
	return 0;
}
