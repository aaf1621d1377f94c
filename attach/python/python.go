// Package python reads a CPython interpreter's state out of a process's
// memory without running anything in it: the interpreters and thread
// states from _PyRuntime, each thread's Python frames (file, function,
// line), and which thread holds the GIL. CPython 3.11 and 3.12 are read
// through offset tables written from their headers; 3.13 and later
// through the _Py_DebugOffsets table the interpreter keeps at the start
// of _PyRuntime (cookie "xdebugpy"), so a new version needs no new table
// unless that table's own layout changes.
//
// Memory comes in through unwind.Memory, so tests feed synthetic images.
// Every walk is bounded (interpreters, threads, frames, string and line
// table sizes, cycles): garbage memory yields an error, never a hang or a
// huge allocation. The target runs while it is read, so a thread state
// may change under the reader; what is read is a best effort for that
// moment.
package python

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hangdoc/hangdoc/attach/unwind"
)

// Memory is the target's memory (a live process, a core, test bytes).
type Memory = unwind.Memory

// Bounds on every walk.
const (
	maxInterpreters = 64
	maxThreads      = 4096
	maxFrames       = 2048
	maxStringChars  = 4096
	maxLineTable    = 1 << 20
	maxCodeCache    = 4096
	// readBudget bounds the bytes one Read copies out of the target, so
	// that the bounds above cannot multiply into gigabytes on garbage.
	readBudget = 32 << 20
)

// Frame is one Python frame.
type Frame struct {
	File string // co_filename
	Func string // co_qualname ("Worker.run"), co_name when unreadable
	Line int    // 0 when unknown
	// Entry marks the outermost Python frame run by one call of
	// _PyEval_EvalFrameDefault: the frames from one Entry (exclusive) to
	// the next (inclusive) belong to one evaluator frame on the C stack.
	Entry bool
	// Code is the code object's address (frames of one function share it).
	Code uint64
}

// Thread is one PyThreadState.
type Thread struct {
	Addr      uint64 // the PyThreadState
	OSTid     int    // native_thread_id: the kernel's thread id
	PthreadID uint64 // thread_id: the pthread_t
	HoldsGIL  bool
	Frames    []Frame // innermost first
	// Err says why Frames stop early (a frame or code object could not
	// be read); the frames before it are kept.
	Err error
}

// State is what Read found.
type State struct {
	Version Version
	// GIL is set when the GIL's state was read: a thread without
	// HoldsGIL then does not hold it.
	GIL bool
	// GILErr says why the GIL's state could not be read (GIL false).
	GILErr error
	// GILWait are the address ranges (start, end) of the GILs' condition
	// variables: a thread asleep on a futex in one waits in take_gil (a
	// wait on the GIL's mutex may be drop_gil's too, so it is not told).
	GILWait [][2]uint64
	Threads []Thread
}

// Reader reads one interpreter. Keep it across samples: it caches code
// objects and the GIL's place.
type Reader struct {
	mem     Memory
	runtime uint64
	l       layout
	v       Version
	codes   map[codeKey]codeInfo
	gil312  uint64 // offset of interp->ceval.gil in 3.12, found once
	budget  int    // bytes left to read in this Read
}

// NewReader prepares to read the interpreter whose _PyRuntime is at
// runtime. v is the version known from the binary (Py_Version, the file
// name); for 3.13 and later the debug offsets' own version wins.
func NewReader(mem Memory, runtime uint64, v Version) (*Reader, error) {
	r := &Reader{mem: mem, runtime: runtime, v: v, codes: map[codeKey]codeInfo{}}
	head := make([]byte, maxDebugOffsets)
	n, _ := mem.ReadAt(head, runtime)
	if n >= 16 && string(head[:8]) == DebugCookie {
		l, dv, err := parseDebugOffsets(head[:n])
		if err != nil {
			return nil, err
		}
		r.l, r.v = l, dv
		return r, nil
	}
	if n < 8 {
		return nil, fmt.Errorf("_PyRuntime at %#x is unreadable", runtime)
	}
	switch {
	case v.Major() == 3 && v.Minor() == 11:
		r.l = layout311
	case v.Major() == 3 && v.Minor() == 12:
		r.l = layout312
	case v.Major() == 3 && v.Minor() >= 13:
		return nil, fmt.Errorf("CPython %s: no %q debug offsets at _PyRuntime (%#x)", v, DebugCookie, runtime)
	default:
		return nil, fmt.Errorf("CPython %s is not supported (3.11 and later are)", v)
	}
	return r, nil
}

// Version is the version being read.
func (r *Reader) Version() Version { return r.v }

// Read reads the interpreter once.
func Read(mem Memory, runtime uint64, v Version) (*State, error) {
	r, err := NewReader(mem, runtime, v)
	if err != nil {
		return nil, err
	}
	return r.Read()
}

// Read walks every interpreter's thread states and their frames.
func (r *Reader) Read() (*State, error) {
	r.budget = readBudget
	st := &State{Version: r.v}
	interp, err := r.ptr(r.runtime + r.l.runtimeInterpHead)
	if err != nil {
		return nil, fmt.Errorf("_PyRuntime.interpreters.head: %w", err)
	}
	if interp == 0 {
		return nil, errors.New("no interpreter: Python is not initialised yet, or finalised")
	}
	seenInterp := map[uint64]bool{}
	seenThread := map[uint64]bool{}
	for i := 0; interp != 0; i++ {
		if i >= maxInterpreters || seenInterp[interp] {
			return st, fmt.Errorf("interpreter list does not end after %d entries", i)
		}
		seenInterp[interp] = true
		first := len(st.Threads)
		ts, err := r.ptr(interp + r.l.interpThreadsHead)
		if err != nil {
			return st, fmt.Errorf("interpreter %#x: threads: %w", interp, err)
		}
		for ts != 0 {
			if len(st.Threads) >= maxThreads || seenThread[ts] {
				return st, fmt.Errorf("thread list of interpreter %#x does not end", interp)
			}
			seenThread[ts] = true
			th, next, err := r.thread(ts)
			if err != nil {
				return st, err
			}
			st.Threads = append(st.Threads, th)
			ts = next
		}
		r.readGIL(st, interp, st.Threads[first:])
		if interp, err = r.ptr(interp + r.l.interpNext); err != nil {
			return st, fmt.Errorf("interpreter list: %w", err)
		}
	}
	return st, nil
}

// thread reads one thread state and its frames; frame errors stay in
// Thread.Err.
func (r *Reader) thread(ts uint64) (Thread, uint64, error) {
	th := Thread{Addr: ts}
	next, err := r.ptr(ts + r.l.tstateNext)
	if err != nil {
		return th, 0, fmt.Errorf("thread state %#x: %w", ts, err)
	}
	tid, err := r.word(ts + r.l.tstateNativeID)
	if err != nil {
		return th, 0, fmt.Errorf("thread state %#x: native_thread_id: %w", ts, err)
	}
	if tid > 1<<22 { // pid_max is at most 2^22 on Linux
		return th, 0, fmt.Errorf("thread state %#x: native_thread_id %d is not a thread id", ts, tid)
	}
	th.OSTid = int(tid)
	th.PthreadID, _ = r.word(ts + r.l.tstateThreadID)
	th.Frames, th.Err = r.frames(ts)
	return th, next, nil
}

// frames walks a thread's frame chain, innermost first.
func (r *Reader) frames(ts uint64) ([]Frame, error) {
	var frame uint64
	var err error
	if r.l.tstateCFrame != none {
		cframe, err := r.ptr(ts + r.l.tstateCFrame)
		if err != nil || cframe == 0 {
			return nil, err // no cframe: the thread runs no Python
		}
		frame, err = r.ptr(cframe + r.l.cframeCurrentFrame)
		if err != nil {
			return nil, fmt.Errorf("cframe %#x: %w", cframe, err)
		}
	} else if frame, err = r.ptr(ts + r.l.tstateCurrentFrame); err != nil {
		return nil, fmt.Errorf("thread state %#x: current_frame: %w", ts, err)
	}
	l := &r.l
	span := max(l.frameCode, l.framePrevious, l.frameInstr) + 8
	span = max(span, l.frameOwner+1)
	if l.frameIsEntry != none {
		span = max(span, l.frameIsEntry+1)
	}
	if span > 4096 {
		return nil, fmt.Errorf("frame layout spans %d bytes", span)
	}
	buf := make([]byte, span)
	var out []Frame
	seen := map[uint64]bool{}
	for frame != 0 {
		if len(seen) >= maxFrames || seen[frame] {
			return out, fmt.Errorf("frame chain does not end after %d frames", len(seen))
		}
		seen[frame] = true
		if err := r.read(buf, frame); err != nil {
			return out, fmt.Errorf("frame %#x: %w", frame, err)
		}
		le := binary.LittleEndian
		code := le.Uint64(buf[l.frameCode:])
		prev := le.Uint64(buf[l.framePrevious:])
		instr := le.Uint64(buf[l.frameInstr:])
		owner := buf[l.frameOwner]
		if l.taggedCode {
			code &^= 7 // _PyStackRef tag bits
		}
		if owner == l.ownerCStack || owner == l.ownerInterpreter {
			// The shim that starts one evaluator call: the frame read
			// before it was that call's outermost.
			if n := len(out); n > 0 {
				out[n-1].Entry = true
			}
			frame = prev
			continue
		}
		f, err := r.frame(code, instr)
		if err != nil {
			return out, fmt.Errorf("frame %#x: %w", frame, err)
		}
		if l.frameIsEntry != none && buf[l.frameIsEntry] != 0 {
			f.Entry = true
		}
		out = append(out, f)
		frame = prev
	}
	// The outermost frame ends the outermost evaluator call.
	if n := len(out); n > 0 {
		out[n-1].Entry = true
	}
	return out, nil
}

type codeKey struct{ addr, file, name, qual, table uint64 }

type codeInfo struct {
	file, name string
	first      int
	table      []byte
}

// frame names one frame from its code object and instruction pointer.
func (r *Reader) frame(code, instr uint64) (Frame, error) {
	if code == 0 {
		return Frame{}, errors.New("no code object")
	}
	l := &r.l
	hdr := make([]byte, max(l.codeFilename, l.codeName, l.codeQualname, l.codeLinetable, l.codeFirstLineno)+8)
	if err := r.read(hdr, code); err != nil {
		return Frame{}, fmt.Errorf("code object %#x: %w", code, err)
	}
	le := binary.LittleEndian
	key := codeKey{code, le.Uint64(hdr[l.codeFilename:]), le.Uint64(hdr[l.codeName:]), le.Uint64(hdr[l.codeQualname:]), le.Uint64(hdr[l.codeLinetable:])}
	ci, ok := r.codes[key]
	if !ok {
		var err error
		if ci.file, err = r.str(key.file); err != nil {
			return Frame{}, fmt.Errorf("code object %#x: co_filename: %w", code, err)
		}
		if ci.name, err = r.str(key.qual); err != nil || ci.name == "" {
			if ci.name, err = r.str(key.name); err != nil {
				return Frame{}, fmt.Errorf("code object %#x: co_name: %w", code, err)
			}
		}
		ci.first = int(int32(le.Uint32(hdr[l.codeFirstLineno:])))
		ci.table, _ = r.bytesObj(key.table) // no table: the first line is shown
		if len(r.codes) >= maxCodeCache {
			clear(r.codes)
		}
		r.codes[key] = ci
	}
	f := Frame{File: ci.file, Func: ci.name, Code: code, Line: ci.first}
	if instr != 0 {
		// Index of the instruction in code units; prev_instr (3.11, 3.12)
		// points at the last one run, instr_ptr (3.13+) at the current.
		lasti := (int64(instr) - int64(code+l.codeAdaptive)) / 2
		if line := addrToLine(ci.table, ci.first, lasti*2); line > 0 {
			f.Line = line
		}
	}
	return f, nil
}

// readGIL sets HoldsGIL on the thread holding interp's GIL and records
// where its waiters sleep.
func (r *Reader) readGIL(st *State, interp uint64, threads []Thread) {
	var base uint64
	g := r.l.gil
	switch g.kind {
	case gilInRuntime:
		if interp != r.mainInterp() {
			return // subinterpreters share the main GIL in 3.11
		}
		base = r.runtime + g.off
	case gilPointer:
		off, err := r.findGIL312(interp, threads)
		if err != nil {
			st.GILErr = err
			return
		}
		p, err := r.ptr(interp + off)
		if err != nil || p == 0 {
			st.GILErr = fmt.Errorf("interp->ceval.gil (+%d): %#x, %v", off, p, err)
			return
		}
		base = p
	case gilInInterp:
		base = interp
	default:
		return
	}
	locked, err := r.word(base + g.locked)
	if err != nil {
		st.GILErr = fmt.Errorf("GIL at %#x: locked: %w", base, err)
		return
	}
	holder, err := r.ptr(base + g.holder)
	if err != nil {
		st.GILErr = fmt.Errorf("GIL at %#x: holder: %w", base, err)
		return
	}
	st.GIL = true
	st.GILWait = append(st.GILWait, [2]uint64{base + g.cond, base + g.cond + condSize})
	if uint32(locked) == 0 {
		return
	}
	for i := range threads {
		if threads[i].Addr == holder {
			threads[i].HoldsGIL = true
		}
	}
}

func (r *Reader) mainInterp() uint64 {
	// interpreters.main follows head in struct pyinterpreters.
	p, _ := r.ptr(r.runtime + r.l.runtimeInterpHead + 8)
	return p
}

// findGIL312 returns the offset of interp->ceval.gil in 3.12: the
// table's (384 in 3.12.0 and 3.12.1) when it points at interp->_gil or
// at the main interpreter's, or at a structure that looks like a GIL;
// otherwise the first word of the interpreter that points inside it at
// such a structure, in case a 3.12.x build moved it. The error says why
// none was found.
//
// A GIL looks like one when its switch interval (microseconds, any
// positive value: sys.setswitchinterval(1000) makes it 10^9) is not 0,
// its locked flag is 0 or 1, and a locked GIL's holder is one of the
// interpreter's threads (a released GIL's last_holder may be a thread
// state since freed, so the table's pointer accepts any; the search,
// which tries every pointer, wants last_holder to be one of the threads:
// structures that start with a word and two zero words abound).
func (r *Reader) findGIL312(interp uint64, threads []Thread) (uint64, error) {
	if r.gil312 != 0 {
		return r.gil312, nil
	}
	isThread := map[uint64]bool{}
	for _, t := range threads {
		isThread[t.Addr] = true
	}
	le := binary.LittleEndian
	plausible := func(g []byte, strict bool) bool {
		interval, holder, locked := le.Uint64(g), le.Uint64(g[gilHolderOff:]), le.Uint32(g[gilLockedOff:])
		if strict && !isThread[holder] {
			return false
		}
		return interval != 0 && (locked == 0 || locked == 1 && isThread[holder])
	}
	g := r.l.gil
	var buf [24]byte
	p, err := r.ptr(interp + g.off)
	if err == nil && p != 0 && p&7 == 0 {
		if g.own != 0 && (p == interp+g.own || p == r.mainInterp()+g.own) ||
			r.read(buf[:], p) == nil && plausible(buf[:], false) {
			r.gil312 = g.off
			return r.gil312, nil
		}
	}
	const scan = 96 << 10
	raw := make([]byte, scan)
	n, _ := r.mem.ReadAt(raw, interp)
	raw = raw[:max(n, 0)&^7]
	for off := 0; off+8 <= len(raw); off += 8 {
		q := le.Uint64(raw[off:])
		if q <= interp+uint64(off) || q&7 != 0 || q-interp+24 > uint64(len(raw)) {
			continue
		}
		if plausible(raw[q-interp:], true) {
			r.gil312 = uint64(off)
			return r.gil312, nil
		}
	}
	return 0, fmt.Errorf("interp->ceval.gil (+%d) holds %#x, which is not interp->_gil (+%d) nor a GIL structure, and no pointer in the interpreter's first %d KiB leads to one", g.off, p, g.own, scan>>10)
}

// ptr reads a pointer.
func (r *Reader) ptr(addr uint64) (uint64, error) { return r.word(addr) }

func (r *Reader) word(addr uint64) (uint64, error) {
	var b [8]byte
	if err := r.read(b[:], addr); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

func (r *Reader) read(p []byte, addr uint64) error {
	if addr == 0 {
		return errors.New("null pointer")
	}
	if r.budget -= len(p); r.budget < 0 {
		return errReadBudget
	}
	n, err := r.mem.ReadAt(p, addr)
	if n == len(p) {
		return nil
	}
	if err == nil {
		err = &unwind.UnreadableError{Addr: addr + uint64(max(n, 0))}
	}
	return err
}

var errReadBudget = fmt.Errorf("more than %d MiB read: the interpreter's state looks corrupt", readBudget>>20)

// str reads a compact str object (every identifier and file name is one).
func (r *Reader) str(obj uint64) (string, error) {
	l := &r.l
	hdr := make([]byte, max(l.unicodeState+4, l.unicodeLength+8))
	if err := r.read(hdr, obj); err != nil {
		return "", err
	}
	le := binary.LittleEndian
	state := le.Uint32(hdr[l.unicodeState:])
	length := int64(le.Uint64(hdr[l.unicodeLength:]))
	kind := int64(state>>2) & 7
	compact, ascii := state>>5&1 != 0, state>>6&1 != 0
	if !compact {
		return "", fmt.Errorf("str at %#x is not compact", obj)
	}
	if kind != 1 && kind != 2 && kind != 4 {
		return "", fmt.Errorf("str at %#x: kind %d", obj, kind)
	}
	if length < 0 || length > maxStringChars {
		return "", fmt.Errorf("str at %#x: length %d out of bounds", obj, length)
	}
	data := obj + l.compactSize
	if ascii {
		data = obj + l.asciiSize
	}
	raw := make([]byte, length*kind)
	if err := r.read(raw, data); err != nil && length > 0 {
		return "", err
	}
	switch kind {
	case 1:
		if ascii || utf8.Valid(raw) && isASCII(raw) {
			return string(raw), nil
		}
		rs := make([]rune, len(raw)) // Latin-1
		for i, b := range raw {
			rs[i] = rune(b)
		}
		return string(rs), nil
	case 2:
		u := make([]uint16, length)
		for i := range u {
			u[i] = le.Uint16(raw[2*i:])
		}
		return string(utf16.Decode(u)), nil
	default:
		var b strings.Builder
		for i := int64(0); i < length; i++ {
			b.WriteRune(rune(le.Uint32(raw[4*i:])))
		}
		return b.String(), nil
	}
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// bytesObj reads a bytes object's contents.
func (r *Reader) bytesObj(obj uint64) ([]byte, error) {
	size, err := r.word(obj + r.l.bytesSize)
	if err != nil {
		return nil, err
	}
	if int64(size) < 0 || size > maxLineTable {
		return nil, fmt.Errorf("bytes at %#x: size %d out of bounds", obj, int64(size))
	}
	if size > 0 { // the last byte first: no allocation for garbage
		var last [1]byte
		if err := r.read(last[:], obj+r.l.bytesData+size-1); err != nil {
			return nil, err
		}
	}
	b := make([]byte, size)
	if err := r.read(b, obj+r.l.bytesData); err != nil && size > 0 {
		return nil, err
	}
	return b, nil
}
