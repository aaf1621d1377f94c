package goproc

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"unsafe"

	"github.com/go-delve/delve/pkg/dwarf/op"
	"github.com/go-delve/delve/pkg/proc"

	"github.com/hangdoc/hangdoc/attach/procmem"
)

// TestProcessRefusesChanges: every method through which delve could
// change the target returns ErrReadOnly and is counted.
func TestProcessRefusesChanges(t *testing.T) {
	p := &process{mem: procmem.Live(os.Getpid()), threads: map[int]*thread{}, breakpoints: proc.NewBreakpointMap()}
	th := &thread{p: p, tid: os.Getpid()}
	changes := map[string]error{
		"WriteMemory":      second(p.WriteMemory(0x1000, []byte{0xcc})),
		"WriteBreakpoint":  p.WriteBreakpoint(&proc.Breakpoint{Addr: 0x1000}),
		"StepInstruction":  p.StepInstruction(th.tid),
		"ContinueOnce":     third(p.ContinueOnce(nil)),
		"StartCallInject":  second(p.StartCallInjection()),
		"SetReg":           th.SetReg(0, op.DwarfRegisterFromUint64(0)),
		"RestoreRegisters": th.RestoreRegisters(nil),
	}
	for name, err := range changes {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
	if got := p.refused.Load(); got != int64(len(changes)) {
		t.Errorf("%d refusals counted, want %d", got, len(changes))
	}
}

func second[T any](_ T, err error) error { return err }

func third[T, U any](_ T, _ U, err error) error { return err }

// TestPageCache reads this process's own memory through the page cache:
// a read across a page boundary gives the bytes there, twice (the second
// time from the cache), and an unmapped address is refused so that the
// caller reads directly and gets the error.
func TestPageCache(t *testing.T) {
	buf := make([]byte, 3*pageSize)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	addr := uint64(uintptr(unsafe.Pointer(&buf[0])))
	start := (addr+pageSize)&^(pageSize-1) - 100 // 100 bytes before a page boundary
	want := buf[start-addr : start-addr+300]
	c := newPageCache()
	for try := 0; try < 2; try++ {
		got := make([]byte, 300)
		if !c.read(procmem.Live(os.Getpid()), got, start) || !bytes.Equal(got, want) {
			t.Fatalf("read %d across a page boundary: got %x…, want %x…", try, got[:8], want[:8])
		}
	}
	if len(c.pages) != 2 {
		t.Errorf("%d pages cached, want 2", len(c.pages))
	}
	if c.read(procmem.Live(os.Getpid()), make([]byte, 8), 0x10) {
		t.Error("a read at 0x10 (unmapped) succeeded")
	}
	for i := 0; i < maxPages+10; i++ {
		c.add(uint64(i+1)<<32, make([]byte, pageSize))
	}
	if len(c.pages) != maxPages {
		t.Errorf("%d pages cached after %d added, want at most %d", len(c.pages), maxPages+12, maxPages)
	}
}
