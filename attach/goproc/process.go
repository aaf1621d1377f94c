// Package goproc reads the goroutines of a Go process, live or from a
// core file, through delve's proc package without writing to it.
//
// delve's native backend attaches with ptrace for the whole session and
// writes breakpoints into the target (its unrecovered-panic and
// fatal-throw hooks) that stay there if the tracer is SIGKILLed. Here
// delve gets a process it can only read, built the way its core-file
// backend is: registers captured beforehand (the caller stops each thread
// briefly, copies its registers and lets it go), memory read with
// process_vm_readv while the target runs. Every method that would change
// the target (memory, registers, breakpoints, execution) returns an
// error, so the breakpoints delve creates when it opens a target are
// refused before any byte is written.
//
// A core file is read the same way: its memory instead of the live
// process's, its NT_PRSTATUS registers instead of those captured under
// ptrace; the Reader and everything it reads are the same.
package goproc

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/go-delve/delve/pkg/dwarf/op"
	"github.com/go-delve/delve/pkg/elfwriter"
	"github.com/go-delve/delve/pkg/proc"
	"github.com/go-delve/delve/pkg/proc/linutil"

	"github.com/hangdoc/hangdoc/attach/unwind"
)

// ErrReadOnly is what every method that would change the target returns.
var ErrReadOnly = errors.New("hangdoc reads Go processes without changing them")

// Memory is where a target's memory is read: a live process's
// (procmem.Live) or a core file's. A short read returns the bytes read
// and an error.
type Memory = unwind.Memory

// process is a process seen read-only: proc.ProcessInternal and
// proc.ProcessGroup over captured registers and its Memory.
type process struct {
	// unimplemented supplies the eBPF methods (SetUProbe,
	// GetBufferedTracepoints) whose types live in an internal delve
	// package; it is nil, and delve calls them only when SupportsBPF
	// says true, which it never does here.
	unimplemented

	mem         Memory
	entryPoint  uint64
	bi          *proc.BinaryInfo
	threads     map[int]*thread
	breakpoints proc.BreakpointMap
	// refused counts the writes delve asked for and was refused
	// (breakpoints, memory, registers): tests check that it tried and
	// that nothing reached the target.
	refused atomic.Int64
	// pages caches what one sample read (nil between samples): delve
	// reads a goroutine's g and stack a few bytes at a time.
	pages *pageCache
}

const pageSize = 4096

// pageCache keeps the last pages read, at most maxPages of them.
type pageCache struct {
	pages map[uint64][]byte
	order []uint64 // first in, first out
	next  int
}

const maxPages = 1024

func newPageCache() *pageCache {
	return &pageCache{pages: make(map[uint64][]byte, maxPages), order: make([]uint64, 0, maxPages)}
}

// read fills buf from cached pages, reading the missing ones; false
// means a page could not be read (the caller reads buf directly).
func (c *pageCache) read(mem Memory, buf []byte, addr uint64) bool {
	if len(buf) == 0 || len(buf) > pageSize {
		return false
	}
	for done := 0; done < len(buf); {
		a := addr + uint64(done)
		base := a &^ (pageSize - 1)
		page, ok := c.pages[base]
		if !ok {
			page = make([]byte, pageSize)
			if n, err := mem.ReadAt(page, base); err != nil || n != pageSize {
				return false
			}
			c.add(base, page)
		}
		done += copy(buf[done:], page[a-base:])
	}
	return true
}

func (c *pageCache) add(base uint64, page []byte) {
	if len(c.order) < maxPages {
		c.order = append(c.order, base)
	} else {
		delete(c.pages, c.order[c.next])
		c.order[c.next] = base
		c.next = (c.next + 1) % maxPages
	}
	c.pages[base] = page
}

// thread is one OS thread as its registers were when it was stopped.
type thread struct {
	p      *process
	tid    int
	regs   linutil.AMD64PtraceRegs
	common proc.CommonThread
}

func (p *process) refuse() error {
	p.refused.Add(1)
	return ErrReadOnly
}

// ReadMemory reads the target's memory. Small reads go through the page
// cache while a sample is read.
func (p *process) ReadMemory(buf []byte, addr uint64) (int, error) {
	if p.pages != nil && p.pages.read(p.mem, buf, addr) {
		return len(buf), nil
	}
	if len(buf) == 0 {
		return 0, nil
	}
	n, err := p.mem.ReadAt(buf, addr)
	if err == nil && n < len(buf) {
		err = fmt.Errorf("short read at %#x: %d of %d bytes", addr, n, len(buf))
	}
	return n, err
}

func (p *process) WriteMemory(uint64, []byte) (int, error) { return 0, p.refuse() }

// proc.Process

func (p *process) BinInfo() *proc.BinaryInfo        { return p.bi }
func (p *process) EntryPoint() (uint64, error)      { return p.entryPoint, nil }
func (p *process) Breakpoints() *proc.BreakpointMap { return &p.breakpoints }
func (p *process) Memory() proc.MemoryReadWriter    { return p }
func (p *process) FindThread(tid int) (proc.Thread, bool) {
	t, ok := p.threads[tid]
	return t, ok
}

func (p *process) ThreadList() []proc.Thread {
	out := make([]proc.Thread, 0, len(p.threads))
	for _, t := range p.threads {
		out = append(out, t)
	}
	return out
}

// proc.ProcessInternal

func (p *process) Valid() (bool, error)                              { return true, nil }
func (p *process) RequestManualStop(*proc.ContinueOnceContext) error { return nil }
func (p *process) WriteBreakpoint(*proc.Breakpoint) error            { return p.refuse() }
func (p *process) EraseBreakpoint(bp *proc.Breakpoint) error {
	return proc.NoBreakpointError{Addr: bp.Addr}
}
func (p *process) SupportsBPF() bool { return false }
func (p *process) DumpProcessNotes(notes []elfwriter.Note, _ func()) (bool, []elfwriter.Note, error) {
	return false, notes, nil
}
func (p *process) MemoryMap() ([]proc.MemoryMapEntry, error) {
	return nil, proc.ErrMemoryMapNotSupported
}
func (p *process) StartCallInjection() (func(), error) { return nil, p.refuse() }
func (p *process) FollowExec(bool) error               { return nil }

// proc.ProcessGroup: nothing runs, steps or detaches (there is no
// attachment to end).

func (p *process) ContinueOnce(*proc.ContinueOnceContext) (proc.Thread, proc.StopReason, error) {
	return nil, proc.StopUnknown, p.refuse()
}
func (p *process) StepInstruction(int) error { return p.refuse() }
func (p *process) Detach(int, bool) error    { return nil }
func (p *process) Close() error              { return nil }

// proc.Thread

func (t *thread) Breakpoint() *proc.BreakpointState { return &proc.BreakpointState{} }
func (t *thread) ThreadID() int                     { return t.tid }
func (t *thread) Registers() (proc.Registers, error) {
	regs := t.regs // a copy: callers may keep it
	return &linutil.AMD64Registers{Regs: &regs}, nil
}
func (t *thread) RestoreRegisters(proc.Registers) error  { return t.p.refuse() }
func (t *thread) BinInfo() *proc.BinaryInfo              { return t.p.bi }
func (t *thread) ProcessMemory() proc.MemoryReadWriter   { return t.p }
func (t *thread) SetCurrentBreakpoint(bool) error        { return nil }
func (t *thread) SoftExc() bool                          { return false }
func (t *thread) Common() *proc.CommonThread             { return &t.common }
func (t *thread) SetReg(uint64, *op.DwarfRegister) error { return t.p.refuse() }

type unimplemented interface {
	proc.ProcessInternal
}

var (
	_ proc.ProcessInternal = (*process)(nil)
	_ proc.ProcessGroup    = (*process)(nil)
	_ proc.Thread          = (*thread)(nil)
)
