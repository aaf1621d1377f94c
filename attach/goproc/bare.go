package goproc

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/stacks"
)

// bare reads the goroutines of a Go binary that has no DWARF (go test,
// go run and most release builds link with -s -w) from the runtime's
// own structures: the moduledata found through its pointer to the
// pclntab, runtime.allgs found in the bss by the shape of its slice,
// each g's fields at the offsets of the release's layout, and stacks
// unwound with the pclntab's frame sizes, as the runtime's traceback
// unwinds them. It gives the same goroutines, statuses, frames and
// objects as the DWARF path, without the arguments' names.
type bare struct {
	what    string
	l       *layout
	status  []string
	reasons []string
	mem     *cachedMemory
	bias    uint64 // a PIE's load bias: runtime address - link-time address
	tab     *pclntab
	bss     [2]uint64 // runtime addresses
	// allgs is the runtime address of runtime.allgs, found on the
	// first read (0 until then).
	allgs uint64
	// semtable is the runtime address of runtime.semtable, 0 when it
	// was not found (sync waits then have no object).
	semtable      uint64
	semDone       bool
	semCandidates []uint64 // link-time addresses semtable may be at
	live          bool
}

// cachedMemory is a Memory read through a page cache while a sample is
// read (nil cache between samples: the target runs).
type cachedMemory struct {
	mem   Memory
	pages *pageCache
}

func (m *cachedMemory) ReadAt(buf []byte, addr uint64) (int, error) {
	if m.pages != nil && m.pages.read(m.mem, buf, addr) {
		return len(buf), nil
	}
	n, err := m.mem.ReadAt(buf, addr)
	if err == nil && n < len(buf) {
		err = fmt.Errorf("short read at %#x: %d of %d bytes", addr, n, len(buf))
	}
	return n, err
}

func (m *cachedMemory) u64(addr uint64) (uint64, bool) {
	var b [8]byte
	if addr == 0 {
		return 0, false
	}
	if _, err := m.ReadAt(b[:], addr); err != nil {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[:]), true
}

// maxData bounds what is read of the executable's data to find the
// runtime's variables.
const maxData = 64 << 20

// openBare prepares a read without DWARF: the pclntab from the
// executable, the moduledata from memory. Nothing is stopped.
func openBare(what, exe string, entry uint64, mem Memory, version string) (*bare, error) {
	l, ok := layoutFor(version)
	if !ok {
		return nil, fmt.Errorf("%s: the runtime layout of %s is not known to hangdoc (known: Go %s), so its goroutines cannot be read without DWARF", what, version, knownReleases())
	}
	f, err := elf.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("%s: goroutines without DWARF are read on x86-64 only, not %v", what, f.Machine)
	}
	pcln := f.Section(".gopclntab")
	if pcln == nil || pcln.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("%s: the executable has no .gopclntab section", what)
	}
	data, err := pcln.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: .gopclntab: %v", what, err)
	}
	b := &bare{what: what, l: l, mem: &cachedMemory{mem: mem}, bias: entry - f.Entry}
	strs := runtimeStrings[release(version)]
	b.status, b.reasons = strs.status, strs.waitReasons
	md, err := b.moduledata(pcln.Addr, f.Sections)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	word := func(off int64) uint64 { return binary.LittleEndian.Uint64(md[off:]) }
	b.bss = [2]uint64{word(l.mdBss), word(l.mdEbss)}
	gofunc := word(l.mdGofunc) - b.bias
	rodata, err := segmentReader(f, gofunc)
	if err != nil {
		return nil, fmt.Errorf("%s: the funcdata (moduledata.gofunc %#x): %v", what, gofunc, err)
	}
	b.tab, err = newPclntab(data, l, word(l.mdText)-b.bias, gofunc, rodata)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	if text := f.Section(".text"); text != nil {
		b.semCandidates = semtableCandidates(b.tab, text, b.bss[0]-b.bias, b.bss[1]-b.bias)
	}
	if text := f.Section(".text"); text != nil && (b.tab.text < text.Addr || b.tab.text >= text.Addr+text.Size) {
		return nil, fmt.Errorf("%s: the moduledata's text %#x is outside .text: not the runtime layout of %s", what, b.tab.text, version)
	}
	return b, nil
}

// moduledata finds runtime.firstmoduledata: the word of the
// initialised writable data (.noptrdata; Go 1.26's .go.module) that
// points at the pclntab (its first field, pcHeader), its ftab slice
// pointing into the pclntab too; and returns its first bytes.
func (b *bare) moduledata(pclntab uint64, sections []*elf.Section) ([]byte, error) {
	want := pclntab + b.bias
	mdSize := int(b.l.mdGofunc + 8)
	for _, sec := range sections {
		if sec.Type != elf.SHT_PROGBITS || sec.Flags&elf.SHF_WRITE == 0 || sec.Size == 0 {
			continue
		}
		buf := make([]byte, min(sec.Size, maxData))
		if n, err := b.mem.ReadAt(buf, sec.Addr+b.bias); err != nil {
			buf = buf[:n]
		}
		for i := 0; i+mdSize <= len(buf); i += 8 {
			if binary.LittleEndian.Uint64(buf[i:]) != want {
				continue
			}
			md := buf[i : i+mdSize]
			if ftab := binary.LittleEndian.Uint64(md[128:]); ftab > want && ftab < want+uint64(maxData) {
				return md, nil
			}
		}
	}
	return nil, errors.New("no moduledata points at the pclntab: the runtime's tables could not be found")
}

// segmentReader reads the executable's bytes by link-time address
// within the loaded segment that holds addr (the read-only data:
// .rodata and .gopclntab, where the funcdata are), read into memory
// once: the file is closed after the open.
func segmentReader(f *elf.File, addr uint64) (func(uint64, int) ([]byte, bool), error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || addr < p.Vaddr || addr >= p.Vaddr+p.Filesz {
			continue
		}
		if p.Filesz > maxData*4 {
			return nil, fmt.Errorf("the segment at %#x is %d bytes", p.Vaddr, p.Filesz)
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			return nil, fmt.Errorf("read the segment at %#x: %v", p.Vaddr, err)
		}
		base := p.Vaddr
		return func(a uint64, n int) ([]byte, bool) {
			if a < base || a+uint64(n) > base+uint64(len(data)) || n < 0 {
				return nil, false
			}
			return data[a-base : a-base+uint64(n)], true
		}, nil
	}
	return nil, fmt.Errorf("no loaded segment holds %#x", addr)
}

// findAllgs finds runtime.allgs in the bss: a slice header {ptr, len,
// cap} whose first element is the main goroutine's g (goid 1, a stack
// with lo < hi) and whose next elements are g's too.
func (b *bare) findAllgs() error {
	size := min(b.bss[1]-b.bss[0], maxData)
	if b.bss[1] <= b.bss[0] {
		return errors.New("the moduledata gives no bss")
	}
	buf := make([]byte, size)
	if n, err := b.mem.ReadAt(buf, b.bss[0]); err != nil && n == 0 {
		return fmt.Errorf("read the bss: %v", err)
	}
	for i := 0; i+24 <= len(buf); i += 8 {
		p := binary.LittleEndian.Uint64(buf[i:])
		n := binary.LittleEndian.Uint64(buf[i+8:])
		c := binary.LittleEndian.Uint64(buf[i+16:])
		if p == 0 || p%8 != 0 || n == 0 || n > c || c > maxGoroutines {
			continue
		}
		if b.looksLikeAllgs(p, n) {
			b.allgs = b.bss[0] + uint64(i)
			return nil
		}
	}
	return errors.New("runtime.allgs not found in the bss")
}

// maxGoroutines bounds the goroutines read.
const maxGoroutines = 10_000_000

func (b *bare) looksLikeAllgs(p, n uint64) bool {
	seen := map[uint64]bool{}
	for i := uint64(0); i < min(n, 8); i++ {
		g, ok := b.mem.u64(p + 8*i)
		if !ok || g == 0 || g%8 != 0 {
			return false
		}
		goid, ok1 := b.mem.u64(g + uint64(b.l.gGoid))
		lo, ok2 := b.mem.u64(g + uint64(b.l.gStackLo))
		hi, ok3 := b.mem.u64(g + uint64(b.l.gStackHi))
		if !ok1 || !ok2 || !ok3 || i == 0 && goid != 1 || seen[goid] || lo > hi || hi-lo > 1<<30 {
			return false
		}
		seen[goid] = true
	}
	return true
}

// gFields is one g as read.
type gFields struct {
	addr                     uint64
	goid, status, waitreason uint64
	lo, hi                   uint64
	m                        uint64
	schedSP, schedPC         uint64
	syscallSP, syscallPC     uint64
	waitsince                int64
	lockedm, parentGoid      uint64
	gopc, waiting            uint64
}

func (b *bare) readG(addr uint64, buf []byte) (gFields, bool) {
	if _, err := b.mem.ReadAt(buf, addr); err != nil {
		return gFields{}, false
	}
	w := func(off int64) uint64 {
		if off < 0 {
			return 0
		}
		return binary.LittleEndian.Uint64(buf[off:])
	}
	l := b.l
	return gFields{
		addr: addr, goid: w(l.gGoid), status: uint64(binary.LittleEndian.Uint32(buf[l.gStatus:])),
		waitreason: uint64(buf[l.gWaitreason]), lo: w(l.gStackLo), hi: w(l.gStackHi), m: w(l.gM),
		schedSP: w(l.gSchedSP), schedPC: w(l.gSchedPC), syscallSP: w(l.gSyscallSP), syscallPC: w(l.gSyscallPC),
		waitsince: int64(w(l.gWaitsince)), lockedm: w(l.gLockedm), parentGoid: w(l.gParentGoid),
		gopc: w(l.gGopc), waiting: w(l.gWaiting),
	}, true
}

// gDead is _Gdead: a g on a free list.
const gDead = 6

func (b *bare) read(regs []ThreadRegs, opts Options) (*Result, error) {
	b.mem.pages = newPageCache()
	defer func() { b.mem.pages = nil }()
	if b.allgs == 0 {
		if err := b.findAllgs(); err != nil {
			return nil, fmt.Errorf("%s: %v", b.what, err)
		}
	}
	base, ok1 := b.mem.u64(b.allgs)
	n, ok2 := b.mem.u64(b.allgs + 8)
	if !ok1 || !ok2 || n > maxGoroutines {
		return nil, fmt.Errorf("%s: runtime.allgs is unreadable", b.what)
	}
	ptrs := make([]byte, 8*n)
	if _, err := b.mem.ReadAt(ptrs, base); err != nil {
		return nil, fmt.Errorf("%s: runtime.allgs: %v", b.what, err)
	}
	byTid := map[int]*ThreadRegs{}
	for i := range regs {
		byTid[regs[i].Tid] = &regs[i]
	}
	res := &Result{Notes: []string{withoutDWARFNote}}
	note := func(s string) {
		if !slices.Contains(res.Notes, s) {
			res.Notes = append(res.Notes, s)
		}
	}
	var gs []gFields
	buf := make([]byte, b.l.gSize)
	for i := uint64(0); i < n; i++ {
		addr := binary.LittleEndian.Uint64(ptrs[8*i:])
		g, ok := b.readG(addr, buf)
		if !ok {
			note(fmt.Sprintf("a goroutine could not be read: g at %#x", addr))
			continue
		}
		if g.status&^gScan != gDead {
			gs = append(gs, g)
		}
	}
	now := b.now(gs)
	var sema map[uint64]uint64
	for _, g := range gs {
		gr := &stacks.RuntimeThread{Kind: stacks.KindGoroutine, ID: int(g.goid), Status: b.statusOf(g), LockedToThread: g.lockedm != 0}
		if gr.ID != 1 && g.gopc != 0 {
			gr.CreatedBy = b.creator(g.gopc)
			gr.CreatedByID = int(g.parentGoid)
		}
		st := g.status &^ gScan
		if (st == gWaiting || st == gSyscall) && g.waitsince != 0 && now > g.waitsince {
			gr.WaitMinutes = int((now - g.waitsince) / int64(time.Minute))
		}
		th := &stacks.Thread{Tid: gr.ID, Name: "goroutine " + strconv.Itoa(gr.ID), State: stacks.GoroutineState(gr.Status), Runtime: gr}
		pc, sp, trap := b.startOf(g, byTid)
		frames, err := b.unwind(pc, sp, trap, g.lo, g.hi, opts.MaxDepth)
		th.Stack = framesOfBare(frames)
		wait := syncWait(gr.Status, th.Stack)
		switch {
		case strings.HasPrefix(wait, "chan send") || strings.HasPrefix(wait, "chan receive"):
			if !strings.Contains(wait, "nil chan") && g.waiting != 0 {
				gr.Object, _ = b.mem.u64(g.waiting + uint64(b.l.sC))
			}
		case bareSemaOffsets[wait] > 0:
			if sema == nil {
				sema = b.readSemtable(note)
			}
			if addr, ok := sema[g.addr]; ok {
				gr.Object = addr - uint64(bareSemaOffsets[wait])
			}
		}
		if argsWanted(wait) {
			b.frameArgs(th.Stack, frames)
		}
		res.add(th, err)
	}
	res.addOSThreads(regs, opts, func(tr ThreadRegs) []stacks.Frame {
		frames, _ := b.unwind(tr.Regs.Rip, tr.Regs.Rsp, true, 0, 0, opts.MaxDepth)
		return framesOfBare(frames)
	})
	return res, nil
}

// bareSemaOffsets: where the semaphore a sync wait sleeps on lies in
// the object waited for (sync.Mutex.sema, RWMutex.writerSem and
// readerSem, WaitGroup.sema): the same from Go 1.19 to 1.26 on 64-bit.
// The DWARF path reads them from the types; TestLayoutMatchesDWARF
// checks these against them.
var bareSemaOffsets = map[string]int64{
	"sync.Mutex.Lock":     4,
	"sync.RWMutex.Lock":   8,
	"sync.RWMutex.RLock":  12,
	"sync.WaitGroup.Wait": 8,
}

// statusOf is the status as the runtime prints it (goroutineheader).
func (b *bare) statusOf(g gFields) string {
	return statusText(g.status, g.waitreason, b.status, b.reasons)
}

// startOf is where a goroutine's unwind starts: the registers of the
// thread running it (in Go code or in a system call) when they are on
// its stack, as delve starts there; else its syscall's saved SP and PC
// in a syscall, as the runtime's traceback does; its saved context
// otherwise (parked).
func (b *bare) startOf(g gFields, byTid map[int]*ThreadRegs) (pc, sp uint64, trap bool) {
	st := g.status &^ gScan
	if (st == gRunning || st == gSyscall) && g.m != 0 {
		if tid, ok := b.mem.u64(g.m + uint64(b.l.mProcid)); ok {
			if r := byTid[int(tid)]; r != nil && r.Regs.Rsp >= g.lo && r.Regs.Rsp < g.hi {
				return r.Regs.Rip, r.Regs.Rsp, true
			}
		}
	}
	if st == gSyscall && g.syscallSP != 0 {
		return g.syscallPC, g.syscallSP, false
	}
	return g.schedPC, g.schedSP, false
}

// creator is the go statement at gopc, as delve's G.Go gives it: the
// function holding it, the line of the call.
func (b *bare) creator(gopc uint64) stacks.Frame {
	f, ok := b.tab.find(gopc - b.bias)
	if !ok {
		return stacks.Frame{PC: gopc}
	}
	pc := gopc - b.bias
	if pc > f.entry {
		pc--
	}
	file, line := f.fileLine(pc)
	return stacks.Frame{Func: f.name(), File: file, Line: line, PC: gopc}
}

// now is the runtime's clock at the read: the monotonic clock live; for
// a core, the latest time a goroutine started to wait (the runtime's
// other clocks are variables without a symbol here), so a wait read
// from a core is at least as long as said.
func (b *bare) now(gs []gFields) int64 {
	if b.live {
		return monotonicNow()
	}
	var latest int64
	for _, g := range gs {
		latest = max(latest, g.waitsince)
	}
	return latest
}
