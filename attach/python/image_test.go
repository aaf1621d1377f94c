package python

import (
	"encoding/binary"
	"testing"

	"github.com/hangdoc/hangdoc/attach/unwind"
)

// image is a synthetic address space: one block of bytes at base, laid
// out by the tests after a version's documented structures.
type image struct {
	base uint64
	data []byte
	next uint64
}

func newImage(size int) *image {
	return &image{base: 0x7f0000100000, data: make([]byte, size), next: 0x7f0000100000 + 0x100}
}

func (m *image) ReadAt(p []byte, addr uint64) (int, error) {
	if addr < m.base || addr-m.base >= uint64(len(m.data)) {
		return 0, &unwind.UnreadableError{Addr: addr}
	}
	n := copy(p, m.data[addr-m.base:])
	if n < len(p) {
		return n, &unwind.UnreadableError{Addr: addr + uint64(n)}
	}
	return n, nil
}

// alloc reserves n bytes, 16-aligned like CPython's allocators.
func (m *image) alloc(t testing.TB, n int) uint64 {
	t.Helper()
	a := m.next
	m.next += (uint64(n) + 15) &^ 15
	if m.next-m.base > uint64(len(m.data)) {
		t.Fatalf("image full")
	}
	return a
}

func (m *image) put64(addr, v uint64) { binary.LittleEndian.PutUint64(m.data[addr-m.base:], v) }
func (m *image) put32(addr uint64, v uint32) {
	binary.LittleEndian.PutUint32(m.data[addr-m.base:], v)
}
func (m *image) put8(addr uint64, v byte)       { m.data[addr-m.base] = v }
func (m *image) putBytes(addr uint64, b []byte) { copy(m.data[addr-m.base:], b) }

// str lays out a compact str object: ASCII (kind 1, ascii bit) when s is
// ASCII, UCS-2 otherwise.
func (m *image) str(t testing.TB, l *layout, s string) uint64 {
	rs := []rune(s)
	ascii := true
	for _, r := range rs {
		if r >= 0x80 {
			ascii = false
		}
	}
	if ascii {
		a := m.alloc(t, int(l.asciiSize)+len(rs)+1)
		m.put64(a+l.unicodeLength, uint64(len(rs)))
		m.put32(a+l.unicodeState, 1<<2|1<<5|1<<6) // kind 1, compact, ascii
		m.putBytes(a+l.asciiSize, []byte(s))
		return a
	}
	a := m.alloc(t, int(l.compactSize)+2*len(rs)+2)
	m.put64(a+l.unicodeLength, uint64(len(rs)))
	m.put32(a+l.unicodeState, 2<<2|1<<5) // kind 2, compact
	for i, r := range rs {
		binary.LittleEndian.PutUint16(m.data[a+l.compactSize+uint64(2*i)-m.base:], uint16(r))
	}
	return a
}

func (m *image) bytesObj(t testing.TB, l *layout, b []byte) uint64 {
	a := m.alloc(t, int(l.bytesData)+len(b)+1)
	m.put64(a+l.bytesSize, uint64(len(b)))
	m.putBytes(a+l.bytesData, b)
	return a
}

// code lays out a code object of ninstr instructions whose location table
// gives line first+i to instruction i.
func (m *image) code(t testing.TB, l *layout, file, name, qual string, first, ninstr int) uint64 {
	a := m.alloc(t, int(l.codeAdaptive)+2*ninstr)
	m.put64(a+l.codeFilename, m.str(t, l, file))
	m.put64(a+l.codeName, m.str(t, l, name))
	m.put64(a+l.codeQualname, m.str(t, l, qual))
	m.put32(a+l.codeFirstLineno, uint32(first))
	m.put64(a+l.codeLinetable, m.bytesObj(t, l, stepTable(ninstr)))
	return a
}

// stepTable is a location table where each instruction is one line after
// the previous one: a one-line-0 entry, then one-line-1 entries (codes
// 10 and 11, one code unit each).
func stepTable(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		code := byte(locOneLine0)
		if i > 0 {
			code = locOneLine0 + 1
		}
		b = append(b, 0x80|code<<3|0, 0, 1) // one unit; column bytes
	}
	return b
}

// instrAt is the instruction pointer of instruction i of code.
func instrAt(l *layout, code uint64, i int) uint64 { return code + l.codeAdaptive + uint64(2*i) }

// pyThread describes one thread to lay out.
type pyThread struct {
	tid    int
	frames []pyFrame // innermost first
	// entries lists the frames (indexes) that start an evaluator call.
	holds bool
}

type pyFrame struct {
	file, name string
	first, at  int // first line, instruction index
	entry      bool
}

// buildThreads lays out interp's threads and their frames for layout l,
// marking evaluator calls with is_entry (3.11) or a CSTACK shim (3.12+).
func (m *image) buildThreads(t testing.TB, l *layout, interp uint64, threads []pyThread) []uint64 {
	var addrs []uint64
	var prevTS uint64
	for ti := len(threads) - 1; ti >= 0; ti-- { // head is the newest
		th := threads[ti]
		ts := m.alloc(t, 512)
		m.put64(ts+l.tstateNext, prevTS)
		m.put64(ts+l.tstateNativeID, uint64(th.tid))
		m.put64(ts+l.tstateThreadID, 0x7f0000000000+uint64(th.tid))
		// Frames from the outermost in, each pointing at the previous.
		var prev uint64
		for fi := len(th.frames) - 1; fi >= 0; fi-- {
			f := th.frames[fi]
			if f.entry && l.frameIsEntry == none {
				shim := m.alloc(t, 96)
				m.put64(shim+l.framePrevious, prev)
				m.put8(shim+l.frameOwner, l.ownerCStack)
				prev = shim
			}
			code := m.code(t, l, f.file, f.name, "q."+f.name, f.first, f.at+1)
			fr := m.alloc(t, 96)
			codeWord := code
			if l.taggedCode {
				codeWord |= 1 // a deferred-reference tag
			}
			m.put64(fr+l.frameCode, codeWord)
			m.put64(fr+l.framePrevious, prev)
			m.put64(fr+l.frameInstr, instrAt(l, code, f.at))
			if l.frameIsEntry != none && f.entry {
				m.put8(fr+l.frameIsEntry, 1)
			}
			prev = fr
		}
		if l.tstateCFrame != none {
			cf := m.alloc(t, 32)
			m.put64(cf+l.cframeCurrentFrame, prev)
			m.put64(ts+l.tstateCFrame, cf)
		} else {
			m.put64(ts+l.tstateCurrentFrame, prev)
		}
		prevTS = ts
		addrs = append([]uint64{ts}, addrs...)
	}
	m.put64(interp+l.interpThreadsHead, prevTS)
	return addrs
}

// twoThreads is the scene every version's test lays out: main blocked in
// a lock acquire two evaluator calls deep, a worker holding the GIL.
var twoThreads = []pyThread{
	{tid: 4137, frames: []pyFrame{
		{file: "/srv/app/locks.py", name: "acquire", first: 10, at: 3},
		{file: "/srv/app/main.py", name: "run", first: 20, at: 1, entry: true},
		{file: "/srv/app/main.py", name: "<module>", first: 1, at: 7, entry: true},
	}},
	{tid: 4139, holds: true, frames: []pyFrame{
		{file: "/srv/app/wörk.py", name: "spin", first: 30, at: 2},
		{file: "/usr/lib/python3/threading.py", name: "run", first: 40, at: 0, entry: true},
	}},
}

// checkTwoThreads checks what Read returned for twoThreads.
func checkTwoThreads(t *testing.T, st *State, tsAddrs []uint64) {
	t.Helper()
	if len(st.Threads) != 2 {
		t.Fatalf("%d threads, want 2: %+v", len(st.Threads), st.Threads)
	}
	for i, want := range twoThreads {
		got := st.Threads[i]
		if got.OSTid != want.tid || got.Addr != tsAddrs[i] || got.PthreadID != 0x7f0000000000+uint64(want.tid) {
			t.Errorf("thread %d: tid %d addr %#x pthread %#x, want %d %#x", i, got.OSTid, got.Addr, got.PthreadID, want.tid, tsAddrs[i])
		}
		if got.HoldsGIL != want.holds {
			t.Errorf("thread %d: HoldsGIL %v, want %v", want.tid, got.HoldsGIL, want.holds)
		}
		if got.Err != nil {
			t.Errorf("thread %d: %v", want.tid, got.Err)
		}
		if len(got.Frames) != len(want.frames) {
			t.Fatalf("thread %d: %d frames %+v, want %d", want.tid, len(got.Frames), got.Frames, len(want.frames))
		}
		for j, wf := range want.frames {
			gf := got.Frames[j]
			if gf.File != wf.file || gf.Func != "q."+wf.name || gf.Line != wf.first+wf.at || gf.Entry != wf.entry {
				t.Errorf("thread %d frame %d: %s %s:%d entry=%v, want q.%s %s:%d entry=%v",
					want.tid, j, gf.Func, gf.File, gf.Line, gf.Entry, wf.name, wf.file, wf.first+wf.at, wf.entry)
			}
		}
	}
	if !st.GIL {
		t.Errorf("GIL state not read")
	}
}
