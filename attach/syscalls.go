package attach

import (
	"fmt"

	"github.com/hangdoc/hangdoc/attach/unwind"
)

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

// The same on arm64, whose numbers are the generic ones
// (include/uapi/asm-generic/unistd.h); it has no poll, select, pause,
// fork or epoll_wait, only their newer forms.
var syscallNamesARM64 = map[int64]string{
	22: "epoll_pwait", 25: "fcntl", 29: "ioctl", 32: "flock", 63: "read", 64: "write",
	65: "readv", 66: "writev", 67: "pread64", 68: "pwrite64", 72: "pselect6", 73: "ppoll",
	82: "fsync", 83: "fdatasync", 95: "waitid", 98: "futex", 101: "nanosleep",
	115: "clock_nanosleep", 124: "sched_yield", 133: "rt_sigsuspend", 137: "rt_sigtimedwait",
	190: "semget", 191: "semctl", 192: "semtimedop", 193: "semop", 202: "accept",
	203: "connect", 206: "sendto", 207: "recvfrom", 211: "sendmsg", 212: "recvmsg",
	220: "clone", 221: "execve", 242: "accept4", 243: "recvmmsg", 260: "wait4",
	269: "sendmmsg", 435: "clone3", 441: "epoll_pwait2", 449: "futex_waitv",
}

// syscallName names system call nr of architecture a (nil: the one
// hangdoc runs on, a live target's).
func syscallName(a *unwind.Arch, nr int64) string {
	if nr < 0 {
		return "none"
	}
	names := syscallNames
	if a == unwind.ARM64 || a == nil && hostArch == unwind.ARM64 {
		names = syscallNamesARM64
	}
	if n, ok := names[nr]; ok {
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
