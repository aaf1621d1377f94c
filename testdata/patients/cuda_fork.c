/*
 * cuda_fork: the CUDA-in-a-forked-child hang (PyTorch: "Cannot
 * re-initialize CUDA in forked subprocess"; DataLoader or Inductor workers
 * forked after the parent touched the GPU). The parent initialises the
 * fake accelerator driver libfakeaccel.so (fakeaccel_init: its driver
 * thread "fakeaccel-drv" holds the driver's context lock
 * fakeaccel_ctx_lock and services the device), then forks a worker. The
 * worker calls into the driver, fakeaccel_launch(), which takes the
 * context lock: the child's copy is locked by the parent's driver thread,
 * which does not exist in the child. The child blocks for ever.
 *
 * Build: gcc -shared -fPIC -o DIR/libfakeaccel.so fakeaccel.c, then
 *        gcc -O2 -g -pthread cuda_fork.c -LDIR -Wl,-rpath,DIR -lfakeaccel
 *
 * Prints, before "ready": "owner=<tid of fakeaccel-drv in the parent>",
 * "child=<pid of the child>". The parent waits in waitpid for ever; the
 * child stays in the patient's process group and gets SIGKILL when the
 * parent dies.
 *
 * Expected stacks (innermost first):
 *   child main:  futex wait ← __lll_lock_wait ← pthread_mutex_lock ←
 *                fakeaccel_submit ← fakeaccel_launch ← run_worker ← main
 *   parent fakeaccel-drv: clock_nanosleep ← nanosleep ←
 *                fakeaccel_service_queue ← fakeaccel_driver_main ← start_thread
 *   parent main: wait4 ← waitpid ← patient_hang_on_child ← main
 * Expected verdict: fork-after-accelerator-init naming the child's thread
 * in the driver (fork-inherited-lock applies too: the owner is the
 * parent's driver thread).
 */
#include "patient.h"

int fakeaccel_init(void);
pid_t fakeaccel_driver_tid(void);
int fakeaccel_launch(int kernel);

static volatile int sink;

static PATIENT_NOINLINE int run_worker(int id)
{
	int r = fakeaccel_launch(id); /* for ever */
	sink += r;
	return r;
}

int main(void)
{
	if (fakeaccel_init() != 0)
		patient_die("fakeaccel_init");
	pid_t owner = fakeaccel_driver_tid();

	pid_t child = patient_fork();
	if (child == 0) {
		run_worker(1);
		_exit(0);
	}
	patient_sayf("owner=%d\n", (int)owner);
	patient_hang_on_child(child, PATIENT_SYS_FUTEX);
	return 0;
}
