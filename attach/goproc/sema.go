package goproc

// maxSemaWaiters bounds a walk of the semaphore table, which the target
// changes while it is read.
const maxSemaWaiters = 1 << 20

// semWalk walks runtime.semtable (runtime/sema.go): per entry a treap
// of sudogs, one per semaphore address, with the other waiters on the
// same address on its waitlink. sync.Mutex, RWMutex and WaitGroup sleep
// there. The offsets are those of runtime.sudog; u64 reads a word of
// the target.
type semWalk struct {
	g, elem, waitlink, prev, next int64
	u64                           func(addr uint64) (uint64, bool)
}

// waiters maps each goroutine (its g's address) sleeping on a semaphore
// to the semaphore's address, for the count entries of the table at
// table, stride bytes apart, each with its treap's root at treap.
func (w semWalk) waiters(table uint64, count, stride, treap int64) map[uint64]uint64 {
	out := map[uint64]uint64{}
	seen := map[uint64]bool{}
	var visit func(s uint64, depth int)
	visit = func(s uint64, depth int) {
		if s == 0 || seen[s] || len(seen) > maxSemaWaiters || depth > 64 {
			return
		}
		seen[s] = true
		elem, _ := w.u64(s + uint64(w.elem))
		for q, k := s, 0; q != 0 && k < maxSemaWaiters; k++ {
			if g, ok := w.u64(q + uint64(w.g)); ok && g != 0 {
				out[g] = elem
			}
			next, ok := w.u64(q + uint64(w.waitlink))
			if !ok || next == q {
				break
			}
			q = next
		}
		left, _ := w.u64(s + uint64(w.prev))
		right, _ := w.u64(s + uint64(w.next))
		visit(left, depth+1)
		visit(right, depth+1)
	}
	for i := int64(0); i < count; i++ {
		if root, ok := w.u64(table + uint64(i*stride+treap)); ok {
			visit(root, 0)
		}
	}
	return out
}
