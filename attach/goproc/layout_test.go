package goproc

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// go119 is Debian's Go 1.19 (golang-1.19-go, scripts/install-deps.sh).
const go119 = "/usr/lib/go-1.19/bin/go"

// toolchains builds the DWARF ABBA patient with each Go on the machine.
func toolchains(t *testing.T) map[string]string {
	t.Helper()
	bins := map[string]string{}
	add := func(bin string) {
		v, ok := Version(bin)
		if !ok {
			t.Fatalf("%s: no Go build info", bin)
		}
		bins[release(v)] = bin
	}
	add(patient.BuildGo(t, "abba"))
	patient.RequireTool(t, go119)
	add(patient.BuildGoWith(t, go119, "abba"))
	return bins
}

// TestLayoutMatchesDWARF: each release's layout row is the one the
// release's own compiler laid out, as the DWARF of a binary it built
// says: every offset of runtime.g, m, sudog, moduledata, _func,
// inlinedCall, semtable and of the sync types' semaphores.
func TestLayoutMatchesDWARF(t *testing.T) {
	for rel, bin := range toolchains(t) {
		l, ok := layouts[rel]
		if !ok {
			t.Errorf("%s: no layout for the toolchain on this machine", rel)
			continue
		}
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		d, err := f.DWARF()
		if err != nil {
			t.Fatal(err)
		}
		types := structs(t, d)
		off := func(path ...string) int64 {
			st := types[path[0]]
			var o int64
			for _, name := range path[1:] {
				if st == nil {
					return -1
				}
				var field *dwarf.StructField
				for _, fl := range st.Field {
					if fl.Name == name {
						field = fl
					}
				}
				if field == nil {
					return -1
				}
				o += field.ByteOffset
				ft := field.Type
				for {
					td, ok := ft.(*dwarf.TypedefType)
					if !ok {
						break
					}
					ft = td.Type
				}
				st, _ = ft.(*dwarf.StructType)
				if st != nil && len(st.Field) == 0 {
					st = types[st.StructName] // a declaration: the definition is by name
				}
			}
			return o
		}
		size := func(name string) int64 {
			if types[name] == nil {
				return -1
			}
			return types[name].ByteSize
		}
		// maybeTraceablePtr (Go 1.26): the address is its vu.
		ptr := func(s, field string) int64 {
			if o := off(s, field, "vu"); o >= 0 {
				return o
			}
			if o := off(s, field, "maybeTraceablePtr", "vu"); o >= 0 {
				return o
			}
			return off(s, field)
		}
		mutexSema := off("internal/sync.Mutex", "sema")
		if mutexSema < 0 {
			mutexSema = off("sync.Mutex", "sema")
		}
		wgSema := off("sync.WaitGroup", "sema")
		if wgSema < 0 {
			wgSema = off("sync.WaitGroup", "state2") // Go 1.19: the semaphore of a 64-bit-aligned WaitGroup
		}
		semStride := int64(-1)
		if sym, ok := symbol(f, "runtime.semtable"); ok {
			semStride = int64(sym.Size) / semTabSize
		}
		checks := []struct {
			name      string
			got, want int64
		}{
			{"g size", l.gSize, size("runtime.g")},
			{"g.stack.lo", l.gStackLo, off("runtime.g", "stack", "lo")},
			{"g.stack.hi", l.gStackHi, off("runtime.g", "stack", "hi")},
			{"g.m", l.gM, off("runtime.g", "m")},
			{"g.sched.sp", l.gSchedSP, off("runtime.g", "sched", "sp")},
			{"g.sched.pc", l.gSchedPC, off("runtime.g", "sched", "pc")},
			{"g.sched.bp", l.gSchedBP, off("runtime.g", "sched", "bp")},
			{"g.syscallsp", l.gSyscallSP, off("runtime.g", "syscallsp")},
			{"g.syscallpc", l.gSyscallPC, off("runtime.g", "syscallpc")},
			{"g.atomicstatus", l.gStatus, off("runtime.g", "atomicstatus")},
			{"g.goid", l.gGoid, off("runtime.g", "goid")},
			{"g.waitsince", l.gWaitsince, off("runtime.g", "waitsince")},
			{"g.waitreason", l.gWaitreason, off("runtime.g", "waitreason")},
			{"g.lockedm", l.gLockedm, off("runtime.g", "lockedm")},
			{"g.parentGoid", l.gParentGoid, off("runtime.g", "parentGoid")},
			{"g.gopc", l.gGopc, off("runtime.g", "gopc")},
			{"g.startpc", l.gStartpc, off("runtime.g", "startpc")},
			{"g.ancestors", l.gAncestors, off("runtime.g", "ancestors")},
			{"g.waiting", l.gWaiting, off("runtime.g", "waiting")},
			{"m.procid", l.mProcid, off("runtime.m", "procid")},
			{"m.curg", l.mCurg, off("runtime.m", "curg")},
			{"sudog.g", l.sG, off("runtime.sudog", "g")},
			{"sudog.next", l.sNext, off("runtime.sudog", "next")},
			{"sudog.prev", l.sPrev, off("runtime.sudog", "prev")},
			{"sudog.elem", l.sElem, ptr("runtime.sudog", "elem")},
			{"sudog.waitlink", l.sWaitlink, off("runtime.sudog", "waitlink")},
			{"sudog.c", l.sC, ptr("runtime.sudog", "c")},
			{"moduledata.pcHeader", 0, off("runtime.moduledata", "pcHeader")},
			{"moduledata.ftab", 128, off("runtime.moduledata", "ftab")},
			{"moduledata.text", l.mdText, off("runtime.moduledata", "text")},
			{"moduledata.bss", l.mdBss, off("runtime.moduledata", "bss")},
			{"moduledata.ebss", l.mdEbss, off("runtime.moduledata", "ebss")},
			{"moduledata.gofunc", l.mdGofunc, off("runtime.moduledata", "gofunc")},
			{"_func size", l.funcSize, size("runtime._func")},
			{"_func.nfuncdata", l.funcSize - 1, off("runtime._func", "nfuncdata")},
			{"_func.flag", l.funcSize - 3, off("runtime._func", "flag")},
			{"inlinedCall size", l.inlSize, size("runtime.inlinedCall")},
			{"inlinedCall.funcID", l.inlFuncID, off("runtime.inlinedCall", "funcID")},
			{"inlinedCall.nameOff", l.inlName, max(off("runtime.inlinedCall", "nameOff"), off("runtime.inlinedCall", "func_"))},
			{"inlinedCall.parentPc", l.inlParentPC, off("runtime.inlinedCall", "parentPc")},
			{"semaRoot.treap", l.semTreap, off("runtime.semaRoot", "treap")},
			{"semaRoot.nwait", l.semTreap + 8, off("runtime.semaRoot", "nwait")},
			{"semtable stride", l.semStride, semStride},
			{"Mutex.sema", bareSemaOffsets["sync.Mutex.Lock"], mutexSema},
			{"RWMutex.writerSem", bareSemaOffsets["sync.RWMutex.Lock"], off("sync.RWMutex", "writerSem")},
			{"RWMutex.readerSem", bareSemaOffsets["sync.RWMutex.RLock"], off("sync.RWMutex", "readerSem")},
			{"WaitGroup.sema", bareSemaOffsets["sync.WaitGroup.Wait"], wgSema},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s: %s at %d in the layout, %d in the DWARF of %s", rel, c.name, c.got, c.want, bin)
			}
		}
		for _, s := range []struct {
			sym  string
			want []string
		}{{"runtime.gStatusStrings", runtimeStrings[rel].status}, {"runtime.waitReasonStrings", runtimeStrings[rel].waitReasons}} {
			got := elfStrings(t, f, s.sym)
			if !slices.Equal(got, s.want) {
				t.Errorf("%s: %s in the binary %q, generated %q", rel, s.sym, got, s.want)
			}
		}
		f.Close()
	}
}

func structs(t *testing.T, d *dwarf.Data) map[string]*dwarf.StructType {
	out := map[string]*dwarf.StructType{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			return out
		}
		if e.Tag != dwarf.TagStructType {
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if out[name] != nil {
			continue
		}
		if ty, err := d.Type(e.Offset); err == nil {
			if st, ok := ty.(*dwarf.StructType); ok {
				out[name] = st
			}
		}
	}
}

func symbol(f *elf.File, name string) (elf.Symbol, bool) {
	syms, _ := f.Symbols()
	for _, s := range syms {
		if s.Name == name {
			return s, true
		}
	}
	return elf.Symbol{}, false
}

// elfStrings reads a [...]string variable of a (non-PIE) binary from
// its initialised data.
func elfStrings(t *testing.T, f *elf.File, name string) []string {
	t.Helper()
	sym, ok := symbol(f, name)
	if !ok {
		t.Fatalf("no symbol %s", name)
	}
	read := func(addr, n uint64) []byte {
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr+n <= p.Vaddr+p.Filesz {
				b := make([]byte, n)
				if _, err := p.ReadAt(b, int64(addr-p.Vaddr)); err != nil {
					t.Fatal(err)
				}
				return b
			}
		}
		t.Fatalf("%s: %#x+%d is not in the file", name, addr, n)
		return nil
	}
	hdrs := read(sym.Value, sym.Size)
	var out []string
	for i := 0; i+16 <= len(hdrs); i += 16 {
		p, n := binary.LittleEndian.Uint64(hdrs[i:]), binary.LittleEndian.Uint64(hdrs[i+8:])
		if n == 0 {
			out = append(out, "")
			continue
		}
		out = append(out, string(read(p, n)))
	}
	return out
}
