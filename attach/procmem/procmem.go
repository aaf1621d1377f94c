// Package procmem reads a live process's memory with process_vm_readv:
// no stop, no ptrace attachment, never a write. The native sampler, the
// Go reader (attach/goproc) and the Python reader all read through it.
package procmem

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Read reads len(p) bytes at addr of process pid's memory. A short read
// (the range runs into an unmapped page) returns the bytes read and an
// error, as unwind.Memory asks.
func Read(pid int, p []byte, addr uint64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	local := []unix.Iovec{{Base: &p[0], Len: uint64(len(p))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if n < 0 {
		n = 0
	}
	if err == nil && n < len(p) {
		err = fmt.Errorf("short read at %#x: %d of %d bytes", addr, n, len(p))
	}
	return n, err
}

// Live is the memory of the process with this pid, read on demand: an
// unwind.Memory.
type Live int

func (pid Live) ReadAt(p []byte, addr uint64) (int, error) { return Read(int(pid), p, addr) }
