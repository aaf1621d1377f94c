// rec recurses DEPTH times, then blocks in pause(): DEPTH+1 rec frames.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

volatile int sink;

NOINLINE int rec(int n) {
	if (n == 0) {
		printf("ready\n");
		fflush(stdout);
		pause();
		return sink;
	}
	int r = rec(n - 1);
	__asm__ volatile("" : "+r"(r)); /* no tail-recursion elimination */
	return r + 1;
}

int main(int argc, char **argv) {
	return rec(argc > 1 ? atoi(argv[1]) : 1000);
}
