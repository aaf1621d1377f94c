package stacks

import (
	"hash/maphash"
	"slices"
)

// A large dump repeats itself: a pool of 2,000 workers parked at one
// place prints one stack 2,000 times. A parser keeps one copy of it, as
// panicparse buckets goroutines while it reads: a frame line seen before
// is not parsed again (its strings are shared), and threads whose stacks
// are equal share one []Frame. The snapshot then costs about one copy of
// each distinct stack, not one per thread. The tables are bounded, so
// an input of nothing but distinct lines costs what it did without them.

// maxMemo bounds how many distinct entries each table keeps, and
// maxMemoBytes the text of their keys (65,536 junk lines of 64 KiB must
// not be kept).
const (
	maxMemo      = 1 << 16
	maxMemoBytes = 4 << 20
)

// memo keeps what a parse of a line's text gave, by the text.
type memo[V any] struct {
	m     map[string]V
	bytes int
}

// get returns parse(key), parsed once per distinct key while the table
// has room. parse is given a copy of key that the table keeps, so what
// it returns may point into it without holding the line it came from.
func (m *memo[V]) get(key string, parse func(string) V) V {
	if v, ok := m.m[key]; ok {
		return v
	}
	if m.m == nil {
		m.m = map[string]V{}
	}
	if len(m.m) >= maxMemo || m.bytes+len(key) > maxMemoBytes {
		return parse(key)
	}
	m.bytes += len(key)
	key = string([]byte(key))
	v := parse(key)
	m.m[key] = v
	return v
}

// stackTable hands out one []Frame for equal stacks.
type stackTable struct {
	seed maphash.Seed
	m    map[uint64][][]Frame
	n    int
}

// share returns a stack equal to st that earlier equal stacks share, st
// itself (its capacity clipped, so that an append copies; a copy when
// st is a buffer the caller reuses) when it is the first. Nobody writes
// into a shared stack's frames.
func (t *stackTable) share(st []Frame, reused bool) []Frame {
	if len(st) == 0 {
		if reused {
			return nil
		}
		return st
	}
	if t.m == nil {
		t.m = map[uint64][][]Frame{}
		t.seed = maphash.MakeSeed()
	}
	h := hashStack(t.seed, st)
	for _, have := range t.m[h] {
		if framesEqual(have, st) {
			return have
		}
	}
	if reused {
		st = slices.Clone(st)
	}
	st = slices.Clip(st)
	if t.n < maxMemo {
		t.m[h] = append(t.m[h], st)
		t.n++
	}
	return st
}

func hashStack(seed maphash.Seed, st []Frame) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for i := range st {
		f := &st[i]
		h.WriteString(f.Func)
		h.WriteByte(0)
		h.WriteString(f.File)
		h.WriteByte(0)
		h.WriteString(f.Module)
		maphash.WriteComparable(&h, f.PC)
		maphash.WriteComparable(&h, f.Line)
		// arguments too: stacks that differ only in them (goroutines
		// with their own channels) must not pile into one bucket
		for _, a := range f.Args {
			h.WriteString(a.Name)
			h.WriteByte(0)
			h.WriteString(a.Value)
			h.WriteByte(0)
		}
	}
	return h.Sum64()
}

// framesEqual says whether two stacks are the same in every field.
func framesEqual(a, b []Frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Func != y.Func || x.Module != y.Module || x.Offset != y.Offset || x.PC != y.PC || x.File != y.File ||
			x.Line != y.Line || x.Inlined != y.Inlined || x.Signal != y.Signal || x.Samples != y.Samples || !slices.Equal(x.Args, y.Args) {
			return false
		}
	}
	return true
}

// runtimeTable hands out one RuntimeThread for goroutines alike in all
// their runtime facts (status, minutes waited, creator, the object
// waited on): 2,000 workers parked at one place created by one
// goroutine share one, so a goroutine costs a Thread, not a Thread and
// its RuntimeThread. ID is then 0: a goroutine's id is its Thread's Tid.
// Nobody writes into a RuntimeThread a parser handed out.
type runtimeTable struct {
	m map[runtimeKey]*RuntimeThread
}

// runtimeKey is what a goroutine dump says of a goroutine besides its id
// and stack; a creator frame with arguments or held objects (no Go dump
// prints them) are not shared.
type runtimeKey struct {
	status, createdFunc, createdFile, createdModule string
	createdLine                                     int
	createdPC, createdOffset, object                uint64
	minutes, createdByID                            int
	locked, createdInlined                          bool
}

// share returns a RuntimeThread equal to g but for its ID (0).
func (t *runtimeTable) share(g RuntimeThread) *RuntimeThread {
	g.ID = 0
	c := g.CreatedBy
	if g.Kind != KindGoroutine || g.ObjectType != "" || g.Holder != 0 || len(g.Held) > 0 || g.HoldsGIL ||
		len(c.Args) > 0 || c.Signal || c.Samples != 0 {
		return heapRuntime(g)
	}
	k := runtimeKey{status: g.Status, createdFunc: c.Func, createdFile: c.File, createdModule: c.Module, createdLine: c.Line,
		createdPC: c.PC, createdOffset: c.Offset, object: g.Object, minutes: g.WaitMinutes, createdByID: g.CreatedByID,
		locked: g.LockedToThread, createdInlined: c.Inlined}
	if have := t.m[k]; have != nil {
		return have
	}
	if t.m == nil {
		t.m = map[runtimeKey]*RuntimeThread{}
	}
	n := heapRuntime(g)
	if len(t.m) < maxMemo {
		t.m[k] = n
	}
	return n
}

// heapRuntime is a copy of g of its own. share's g is not taken the
// address of, so it stays on the stack when an equal one is found (a
// goroutine dump's goroutines alike allocate nothing).
func heapRuntime(g RuntimeThread) *RuntimeThread {
	n := new(RuntimeThread)
	*n = g
	return n
}
