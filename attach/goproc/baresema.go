package goproc

import (
	"debug/elf"
	"slices"

	"golang.org/x/arch/x86/x86asm"
)

// semTabSize is the number of runtime.semtable's entries (runtime/sema.go).
const semTabSize = 251

// semtableCandidates are where runtime.semtable, which has no symbol
// here, may be: the addresses in the bss that runtime.semacquire1 and
// runtime.semrelease1 load with a RIP-relative LEA (semtable.rootFor).
// Read from the executable's code at the open.
func semtableCandidates(t *pclntab, text *elf.Section, lo, hi uint64) []uint64 {
	var out []uint64
	for _, name := range []string{"runtime.semacquire1", "runtime.semrelease1"} {
		f, ok := t.byName(name)
		if !ok || f.end <= f.entry || f.end-f.entry > 1<<16 || f.entry < text.Addr {
			continue
		}
		code := make([]byte, f.end-f.entry)
		if _, err := text.ReadAt(code, int64(f.entry-text.Addr)); err != nil {
			continue
		}
		for pc := uint64(0); pc < uint64(len(code)); {
			inst, err := x86asm.Decode(code[pc:], 64)
			if err != nil || inst.Len == 0 {
				pc++
				continue
			}
			pc += uint64(inst.Len)
			if inst.Op != x86asm.LEA {
				continue
			}
			m, ok := inst.Args[1].(x86asm.Mem)
			if !ok || m.Base != x86asm.RIP {
				continue
			}
			target := uint64(int64(f.entry+pc) + m.Disp)
			if target >= lo && target < hi && !slices.Contains(out, target) {
				out = append(out, target)
			}
		}
	}
	return out
}

// findSemtable is the candidate whose 251 entries have the shape of a
// semaRoot padded to a cache line (the padding all zero; the lock word
// is not checked: Go 1.24's spinbit mutex keeps an M pointer in it).
func (b *bare) findSemtable() uint64 {
	for _, c := range b.semCandidates {
		if b.looksLikeSemtable(c + b.bias) {
			return c + b.bias
		}
	}
	return 0
}

func (b *bare) looksLikeSemtable(addr uint64) bool {
	stride := int(b.l.semStride)
	buf := make([]byte, semTabSize*stride)
	if _, err := b.mem.ReadAt(buf, addr); err != nil {
		return false
	}
	for i := 0; i < semTabSize; i++ {
		e := buf[i*stride : (i+1)*stride]
		for _, c := range e[b.l.semTreap+16:] { // past treap and nwait: the padding
			if c != 0 {
				return false
			}
		}
	}
	return true
}

// readSemtable maps each goroutine sleeping on a runtime semaphore to
// the semaphore's address (semWalk); note says once why there is none.
func (b *bare) readSemtable(note func(string)) map[uint64]uint64 {
	if !b.semDone {
		b.semDone = true
		b.semtable = b.findSemtable()
	}
	if b.semtable == 0 {
		note("runtime.semtable was not found without symbols: the objects of sync.Mutex, RWMutex and WaitGroup waits are not known, only their frames")
		return map[uint64]uint64{}
	}
	l := b.l
	w := semWalk{g: l.sG, elem: l.sElem, waitlink: l.sWaitlink, prev: l.sPrev, next: l.sNext, u64: b.mem.u64}
	return w.waiters(b.semtable, semTabSize, l.semStride, l.semTreap)
}
