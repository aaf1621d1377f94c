package procmem

import (
	"bytes"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRead reads this process's own memory: a whole range, a range that
// runs into an unmapped page (the bytes before it and an error), and an
// unmapped address.
func TestRead(t *testing.T) {
	const page = 4096
	m, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	copy(m[page-4:], "abcd")
	addr := uint64(uintptr(unsafe.Pointer(&m[0])))
	// the second page goes (unix.Munmap takes whole mappings only)
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, uintptr(addr+page), page, 0); e != 0 {
		t.Fatal(e)
	}
	mem := Live(os.Getpid())
	got := make([]byte, 4)
	if n, err := mem.ReadAt(got, addr+page-4); n != 4 || err != nil || !bytes.Equal(got, []byte("abcd")) {
		t.Errorf("read = %d, %v, %q; want 4, nil, abcd", n, err, got)
	}
	if n, err := mem.ReadAt(make([]byte, 8), addr+page-4); n != 4 || err == nil {
		t.Errorf("read into an unmapped page = %d, %v; want 4 and an error", n, err)
	}
	if n, err := Read(os.Getpid(), make([]byte, 8), 0); n != 0 || err == nil {
		t.Errorf("read at 0 = %d, %v; want 0 and an error", n, err)
	}
}
