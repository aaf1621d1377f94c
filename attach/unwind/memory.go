package unwind

import (
	"encoding/binary"
	"fmt"
)

// UnreadableError says that memory at Addr could not be read.
type UnreadableError struct {
	Addr uint64
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("memory unreadable at %#x", e.Addr)
}

// Overlay is a Memory that answers from Data (a copy of the target's
// memory starting at Base) and from Next for everything else. The live
// sampler copies the top of a thread's stack while the thread is stopped
// and unwinds after it runs again: the copy is the truth for that moment.
// Next may be nil, in which case only Data is readable.
type Overlay struct {
	Base uint64
	Data []byte
	Next Memory
}

// ReadAt reads len(p) bytes at addr, splitting the read where it crosses
// the edges of Data.
func (o Overlay) ReadAt(p []byte, addr uint64) (int, error) {
	n := 0
	for n < len(p) {
		a := addr + uint64(n)
		if a < addr {
			return n, &UnreadableError{Addr: a} // wrapped around the address space
		}
		if a >= o.Base && a-o.Base < uint64(len(o.Data)) {
			n += copy(p[n:], o.Data[a-o.Base:])
			continue
		}
		// Outside Data: read from Next, up to where Data begins.
		end := len(p)
		if a < o.Base && o.Base-a < uint64(end-n) {
			end = n + int(o.Base-a)
		}
		if o.Next == nil {
			return n, &UnreadableError{Addr: a}
		}
		m, err := o.Next.ReadAt(p[n:end], a)
		if m < 0 || m > end-n {
			m = 0 // a misbehaving Memory must not make us index out of range
		}
		n += m
		if err != nil {
			return n, err
		}
		if n < end { // short read without an error
			return n, &UnreadableError{Addr: addr + uint64(n)}
		}
	}
	return n, nil
}

// readWord reads a little-endian 64-bit word.
func readWord(mem Memory, addr uint64) (uint64, error) {
	var b [8]byte
	if n, err := mem.ReadAt(b[:], addr); n != len(b) {
		if err == nil {
			err = &UnreadableError{Addr: addr}
		}
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}
