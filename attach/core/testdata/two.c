// Two threads, both in pause(); prints "marker=<address of marker>" in
// decimal, then "ready".
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

char marker[] = "hangdoc-core-marker";

static void *idle(void *arg) {
	pause();
	return arg;
}

int main(void) {
	pthread_t t;
	pthread_create(&t, NULL, idle, NULL);
	usleep(50000);
	printf("marker=%lu\nready\n", (unsigned long)marker);
	fflush(stdout);
	pause();
	return 0;
}
