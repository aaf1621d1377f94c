package attach

import "fmt"

// x86-64 system call numbers a hung thread is typically found in
// (arch/x86/entry/syscalls/syscall_64.tbl).
var syscallNames = map[int64]string{
	0: "read", 1: "write", 7: "poll", 16: "ioctl", 17: "pread64", 18: "pwrite64",
	19: "readv", 20: "writev", 23: "select", 24: "sched_yield", 34: "pause",
	35: "nanosleep", 42: "connect", 43: "accept", 44: "sendto", 45: "recvfrom",
	46: "sendmsg", 47: "recvmsg", 56: "clone", 57: "fork", 59: "execve",
	61: "wait4", 64: "semget", 65: "semop", 66: "semctl", 72: "fcntl", 73: "flock",
	74: "fsync", 75: "fdatasync", 128: "rt_sigtimedwait", 130: "rt_sigsuspend",
	202: "futex", 220: "semtimedop", 230: "clock_nanosleep", 232: "epoll_wait",
	247: "waitid", 270: "pselect6", 271: "ppoll", 281: "epoll_pwait",
	288: "accept4", 299: "recvmmsg", 307: "sendmmsg", 435: "clone3",
	441: "epoll_pwait2", 449: "futex_waitv",
}

func syscallName(nr int64) string {
	if nr < 0 {
		return "none"
	}
	if n, ok := syscallNames[nr]; ok {
		return n
	}
	return fmt.Sprintf("syscall_%d", nr)
}

// futexOp names a futex operation word (linux/futex.h).
func futexOp(op uint64) string {
	names := map[uint64]string{
		0: "FUTEX_WAIT", 1: "FUTEX_WAKE", 2: "FUTEX_FD", 3: "FUTEX_REQUEUE",
		4: "FUTEX_CMP_REQUEUE", 5: "FUTEX_WAKE_OP", 6: "FUTEX_LOCK_PI",
		7: "FUTEX_UNLOCK_PI", 8: "FUTEX_TRYLOCK_PI", 9: "FUTEX_WAIT_BITSET",
		10: "FUTEX_WAKE_BITSET", 11: "FUTEX_WAIT_REQUEUE_PI",
		12: "FUTEX_CMP_REQUEUE_PI", 13: "FUTEX_LOCK_PI2",
	}
	name, ok := names[op&0x7f]
	if !ok {
		name = fmt.Sprintf("FUTEX_OP_%d", op&0x7f)
	}
	if op&0x80 != 0 {
		name += "_PRIVATE"
	}
	return name
}
