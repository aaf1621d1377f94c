#include <stdio.h>

__attribute__((noinline)) static int shared_local(int x)
{
	return x * 7;
}

int shared_fn(int x)
{
	return shared_local(x) + 1;
}

// The address of a local function is not routed through a PLT, so the
// test sees where the code really is.
void shared_report(void)
{
	printf("shared %p\n", (void *)&shared_local);
}
