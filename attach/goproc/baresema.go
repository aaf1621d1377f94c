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

// readSemtable maps each goroutine (its g's address) sleeping on a
// runtime semaphore to the semaphore's address: the treap of sudogs of
// each semtable entry, one per address, the other waiters on the same
// address on its waitlink (runtime/sema.go). The target changes it
// while it is read: the walk is bounded.
func (b *bare) readSemtable(note func(string)) map[uint64]uint64 {
	out := map[uint64]uint64{}
	if !b.semDone {
		b.semDone = true
		b.semtable = b.findSemtable()
	}
	if b.semtable == 0 {
		note("runtime.semtable was not found without symbols: the objects of sync.Mutex, RWMutex and WaitGroup waits are not known, only their frames")
		return out
	}
	l := b.l
	seen := map[uint64]bool{}
	var visit func(s uint64, depth int)
	visit = func(s uint64, depth int) {
		if s == 0 || seen[s] || len(seen) > maxSemaWaiters || depth > 64 {
			return
		}
		seen[s] = true
		elem, _ := b.mem.u64(s + uint64(l.sElem))
		for w, k := s, 0; w != 0 && k < maxSemaWaiters; k++ {
			if g, ok := b.mem.u64(w + uint64(l.sG)); ok && g != 0 {
				out[g] = elem
			}
			next, ok := b.mem.u64(w + uint64(l.sWaitlink))
			if !ok || next == w {
				break
			}
			w = next
		}
		left, _ := b.mem.u64(s + uint64(l.sPrev))
		right, _ := b.mem.u64(s + uint64(l.sNext))
		visit(left, depth+1)
		visit(right, depth+1)
	}
	for i := uint64(0); i < semTabSize; i++ {
		if root, ok := b.mem.u64(b.semtable + i*uint64(l.semStride) + uint64(l.semTreap)); ok {
			visit(root, 0)
		}
	}
	return out
}
