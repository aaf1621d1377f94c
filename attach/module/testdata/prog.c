// A patient for the module tests: with an argument it prints addresses
// the test checks (a function of its own, main's return address inside
// libc, a libc function, the vDSO, a function of libshared.so) and waits.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <unistd.h>

#ifdef WITH_SHARED
void shared_report(void);
#endif

__attribute__((noinline)) int line_marker(int x) { /* LINE_MARKER */
	return x * 3 + 1;
}

__attribute__((noinline)) int other_fn(int x)
{
	return line_marker(x) + line_marker(x + 1);
}

int main(int argc, char **argv)
{
	(void)argv;
	if (argc > 1) {
		printf("fn %p\n", (void *)&line_marker);
		printf("ret %p\n", __builtin_return_address(0));
		printf("libc %p\n", dlsym(RTLD_DEFAULT, "nanosleep"));
		printf("vdso %p\n", (void *)getauxval(AT_SYSINFO_EHDR));
#ifdef WITH_SHARED
		shared_report();
#endif
		printf("ready\n");
		fflush(stdout);
		pause();
	}
	return other_fn(argc);
}
