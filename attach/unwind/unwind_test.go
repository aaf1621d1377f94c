package unwind_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/hangdoc/hangdoc/attach/core"
	"github.com/hangdoc/hangdoc/attach/unwind"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// openCore opens a patient's core and the address space it maps; its
// memory falls back to the mapped files for the code the core leaves out.
func openCore(t testing.TB, p *patientCore) (*core.File, unwind.Memory, testSpace) {
	t.Helper()
	cf, err := core.Open(p.core)
	if err != nil {
		t.Fatalf("core.Open: %v", err)
	}
	mem := cf.WithFiles("")
	t.Cleanup(func() { mem.Close(); cf.Close() })
	return cf, mem, loadSpace(t, p, cf)
}

// names returns the function names of a stack, "<signal>" for signal frames.
func names(space testSpace, res unwind.Result) []string {
	var out []string
	for _, f := range res.Frames {
		if f.Signal {
			out = append(out, "<signal>")
			continue
		}
		out = append(out, space.name(f.LookupPC))
	}
	return out
}

func dump(space testSpace, res unwind.Result) string {
	var b strings.Builder
	for i, f := range res.Frames {
		fmt.Fprintf(&b, "  #%d %#x %s cfa=%#x %s signal=%v\n", i, f.PC, space.name(f.LookupPC), f.CFA, f.Method, f.Signal)
	}
	fmt.Fprintf(&b, "  stop: %s (needs regs %v)\n", res.Stop, res.NeedsRegs)
	return b.String()
}

func dumpGDB(g []stacks.Frame) string {
	var b strings.Builder
	for i, f := range g {
		fmt.Fprintf(&b, "  #%d %#x %s inlined=%v\n", i, f.PC, f.Name(), f.Inlined)
	}
	return b.String()
}

// gdbAddr says whether gdb printed an address on frame i ("#3 0x… in f
// ()"): it does on the innermost frame of each machine frame. ParseGDB
// gives the frames inlined into it (no address of their own) its PC and
// marks all but the outermost Inlined; frame 0 at a line start and the
// signal frame have no address.
func gdbAddr(g []stacks.Frame, i int) bool {
	return g[i].PC != 0 && !g[i].Signal && (i == 0 || !g[i-1].Inlined)
}

// checkGDB holds our stack against gdb's: every frame gdb prints with an
// address must be ours at the same PC, in order, and ours must be a
// subsequence of gdb's (frames gdb prints without address, inline frames
// and frame 0 at a line start, are matched by name).
func checkGDB(t *testing.T, space testSpace, res unwind.Result, g []stacks.Frame) {
	t.Helper()
	match := func(i int, f unwind.Frame, gi int) bool {
		switch gf := g[gi]; {
		case gf.Signal:
			return f.Signal
		case gdbAddr(g, gi):
			return gf.PC == f.PC
		case i == 0:
			return true // both start at the thread's PC
		default:
			return slices.Contains(space.names(f.LookupPC), gf.Func)
		}
	}
	j := 0
	for gi, gf := range g {
		if j < len(res.Frames) && match(j, res.Frames[j], gi) {
			j++
			continue
		}
		if gdbAddr(g, gi) || gf.Signal {
			t.Errorf("gdb frame #%d %#x %s missing from ours\nours:\n%sgdb:\n%s", gi, gf.PC, gf.Name(), dump(space, res), dumpGDB(g))
			return
		}
	}
	if j != len(res.Frames) {
		t.Errorf("our frame #%d (%#x %s) is not in gdb's stack\nours:\n%sgdb:\n%s",
			j, res.Frames[j].PC, space.name(res.Frames[j].LookupPC), dump(space, res), dumpGDB(g))
	}
}

// own keeps the names that belong to the patient (not libc).
func own(all []string, mine []string) []string {
	var out []string
	for _, n := range all {
		if n == "<signal>" || slices.Contains(mine, n) {
			out = append(out, n)
		}
	}
	return out
}

// partialRegs keeps only what /proc/PID/task/TID/syscall tells: RSP, RIP.
func partialRegs(r unwind.Regs) unwind.Regs {
	var p unwind.Regs
	p.Set(unwind.RSP, r.Val[unwind.RSP])
	p.Set(unwind.RIP, r.Val[unwind.RIP])
	return p
}

// checkPartial: unwinding from RSP and RIP alone must never produce a
// frame the full unwind does not, and if it stops early it must say that
// reading the registers would help.
func checkPartial(t *testing.T, space testSpace, full unwind.Result, regs unwind.Regs, mem unwind.Memory) unwind.Result {
	t.Helper()
	part := unwind.Unwind(partialRegs(regs), mem, space, unwind.Options{})
	for i, f := range part.Frames {
		if i >= len(full.Frames) || f.PC != full.Frames[i].PC {
			t.Errorf("partial unwind frame #%d differs\npartial:\n%sfull:\n%s", i, dump(space, part), dump(space, full))
			return part
		}
	}
	if len(part.Frames) < len(full.Frames) && !part.NeedsRegs {
		t.Errorf("partial unwind stopped early without NeedsRegs\npartial:\n%sfull:\n%s", dump(space, part), dump(space, full))
	}
	return part
}

func TestThreads(t *testing.T) {
	want := [][]string{
		{"c_read", "b_mid", "a_top", "worker"},
		{"lock_twice", "locker"},
		{"main_inner", "main_outer", "main"},
	}
	mine := slices.Concat(want...)
	for _, pc := range patientCases() {
		t.Run(pc.name, func(t *testing.T) {
			p := pc.get(t, "threads")
			cf, mem, space := openCore(t, p)
			gdb := p.gdbStacks(t)
			if len(cf.Threads) != 3 {
				t.Fatalf("%d threads in the core, want 3", len(cf.Threads))
			}
			var got [][]string
			for _, th := range cf.Threads {
				res := unwind.Unwind(th.Regs, mem, space, unwind.Options{})
				if res.Stop != unwind.StopEnd {
					t.Errorf("thread %d stopped with %q\n%s", th.TID, res.Stop, dump(space, res))
				}
				checkGDB(t, space, res, gdb[th.TID])
				part := checkPartial(t, space, res, th.Regs, mem)
				if slices.Equal(pc.flags, patient.O0g) && strings.Contains(strings.Join(names(space, res), " "), "c_read") {
					// At -O0 c_read's CFA is rbp+16: the syscall file is not enough.
					if !part.NeedsRegs || part.Stop != "needs register rbp" {
						t.Errorf("partial unwind of -O0 code: stop %q needs %v, want needs register rbp", part.Stop, part.NeedsRegs)
					}
				}
				got = append(got, own(names(space, res), mine))
			}
			for _, w := range want {
				if !slices.ContainsFunc(got, func(g []string) bool { return slices.Equal(g, w) }) {
					t.Errorf("no thread with %v; got %v", w, got)
				}
			}
		})
	}
}

// hideSignalFDEs drops the CFI of signal frames (glibc's __restore_rt),
// so the unwinder must recognise them by their code.
type hideSignalFDEs struct{ unwind.Tables }

func (h hideSignalFDEs) FDEForPC(pc uint64) *frame.FrameDescriptionEntry {
	f := h.Tables.FDEForPC(pc)
	if f != nil && strings.Contains(f.CIE.Augmentation, "S") {
		return nil
	}
	return f
}

func TestSignalFrame(t *testing.T) {
	want := []string{"handler_block", "handler", "<signal>", "spin", "spin_outer", "main"}
	for _, pc := range patientCases() {
		t.Run(pc.name, func(t *testing.T) {
			p := pc.get(t, "sig")
			cf, mem, space := openCore(t, p)
			gdb := p.gdbStacks(t)
			th := cf.Threads[0]
			for _, tc := range []struct {
				name   string
				tables unwind.Tables
				method string
			}{{"cfi", space, "cfi"}, {"code", hideSignalFDEs{space}, "signal"}} {
				res := unwind.Unwind(th.Regs, mem, tc.tables, unwind.Options{})
				if res.Stop != unwind.StopEnd {
					t.Errorf("%s: stopped with %q\n%s", tc.name, res.Stop, dump(space, res))
				}
				checkGDB(t, space, res, gdb[th.TID])
				checkPartial(t, space, res, th.Regs, mem)
				got := own(names(space, res), want)
				if !slices.Equal(got, want) {
					t.Errorf("%s: got %v, want %v\n%s", tc.name, got, want, dump(space, res))
					continue
				}
				i := slices.IndexFunc(res.Frames, func(f unwind.Frame) bool { return f.Signal })
				sig, spin := res.Frames[i], res.Frames[i+1]
				if sig.LookupPC != sig.PC || spin.LookupPC != spin.PC {
					t.Errorf("%s: signal frame and the interrupted one must be looked up at PC: %+v %+v", tc.name, sig, spin)
				}
				if spin.Method != tc.method {
					t.Errorf("%s: interrupted frame found by %q, want %q", tc.name, spin.Method, tc.method)
				}
				if spin.Regs.Valid != 1<<unwind.NumRegs-1 {
					t.Errorf("%s: interrupted frame knows registers %#x, want all", tc.name, spin.Regs.Valid)
				}
				if res.Frames[i+2].LookupPC != res.Frames[i+2].PC-1 {
					t.Errorf("%s: the frame after the interrupted one is a call: LookupPC must be PC-1", tc.name)
				}
			}
		})
	}
}

// patientCase is a way to build a patient and dump its core.
type patientCase struct {
	name   string
	flags  []string
	kernel bool // the kernel dumps it, not gcore
}

func (pc patientCase) get(t testing.TB, prog string) *patientCore {
	if pc.kernel {
		return getKernelPatient(t, prog, pc.flags)
	}
	return getPatient(t, prog, pc.flags)
}

// patientCases: gcore at -O2 (no frame pointers) and -O0 -g, and a kernel
// core at -O2 (no code in it: the unwinder reads code bytes from the
// mapped files).
func patientCases() []patientCase {
	return []patientCase{
		{"gcore-O2", patient.O2, false},
		{"gcore-O0g", patient.O0g, false},
		{"kernel-O2", patient.O2, true},
	}
}

const recDepth = 1000

func TestRecursionDepth(t *testing.T) {
	for _, pc := range patientCases() {
		if pc.kernel {
			continue // gcore's cores are enough here
		}
		t.Run(pc.name, func(t *testing.T) {
			p := pc.get(t, "rec")
			cf, mem, space := openCore(t, p)
			th := cf.Threads[0]

			res := unwind.Unwind(th.Regs, mem, space, unwind.Options{MaxDepth: 5000})
			if res.Stop != unwind.StopEnd {
				t.Fatalf("stopped with %q\n%s", res.Stop, dump(space, res))
			}
			n := 0
			for _, name := range names(space, res) {
				if name == "rec" {
					n++
				}
			}
			if n != recDepth+1 {
				t.Errorf("%d rec frames, want %d", n, recDepth+1)
			}
			checkGDB(t, space, res, p.gdbStacks(t)[th.TID])

			for _, max := range []int{0, 1, 100} {
				lim := unwind.Unwind(th.Regs, mem, space, unwind.Options{MaxDepth: max})
				want := max
				if max == 0 {
					want = 512
				}
				if len(lim.Frames) != want || lim.Stop != unwind.StopDepth {
					t.Errorf("MaxDepth %d: %d frames, stop %q", max, len(lim.Frames), lim.Stop)
				}
			}
		})
	}
}

// TestNeedsRegs starts an unwind in the middle of -O0 code, whose CFA is
// rbp-based, with only RSP and RIP known.
func TestNeedsRegs(t *testing.T) {
	p := getPatient(t, "threads", patient.O0g)
	cf, mem, space := openCore(t, p)
	for _, th := range cf.Threads {
		full := unwind.Unwind(th.Regs, mem, space, unwind.Options{})
		k := slices.IndexFunc(full.Frames, func(f unwind.Frame) bool { return space.name(f.LookupPC) == "b_mid" })
		if k < 0 {
			continue
		}
		f := full.Frames[k]
		res := unwind.Unwind(partialRegs(f.Regs), mem, space, unwind.Options{})
		if !res.NeedsRegs || res.Stop != "needs register rbp" || len(res.Frames) != 1 {
			t.Errorf("from b_mid with RSP+RIP: stop %q needs %v\n%s", res.Stop, res.NeedsRegs, dump(space, res))
		}
		// With the registers the full unwind recovered, it goes on.
		res = unwind.Unwind(f.Regs, mem, space, unwind.Options{})
		if res.Stop != unwind.StopEnd || len(res.Frames) != len(full.Frames)-k {
			t.Errorf("from b_mid with all registers: stop %q, %d frames, want %d\n%s", res.Stop, len(res.Frames), len(full.Frames)-k, dump(space, res))
		}
		return
	}
	t.Fatal("no thread with b_mid")
}

// TestOverlayStack unwinds from a copy of the top of the stack laid over
// memory where the stack is gone, as the live sampler does.
func TestOverlayStack(t *testing.T) {
	p := getPatient(t, "threads", patient.O2)
	cf, mem, space := openCore(t, p)
	th := cf.Threads[0]
	sp := th.Regs.Val[unwind.RSP]
	full := unwind.Unwind(th.Regs, mem, space, unwind.Options{})

	copyLen := full.Frames[len(full.Frames)-1].CFA - sp
	data := make([]byte, copyLen)
	if n, err := cf.ReadAt(data, sp); n != len(data) {
		t.Fatal(err)
	}
	// Everything but the copied stack reads as zero: a stale stack must
	// not leak through.
	ov := unwind.Overlay{Base: sp, Data: data, Next: zeroStackMem{mem, sp, copyLen}}
	res := unwind.Unwind(th.Regs, ov, space, unwind.Options{})
	if !slices.EqualFunc(res.Frames, full.Frames, func(a, b unwind.Frame) bool { return a.PC == b.PC && a.CFA == b.CFA }) {
		t.Errorf("overlay unwind differs\n%s\nfull:\n%s", dump(space, res), dump(space, full))
	}
}

type zeroStackMem struct {
	unwind.Memory
	lo, n uint64
}

func (z zeroStackMem) ReadAt(p []byte, addr uint64) (int, error) {
	n, err := z.Memory.ReadAt(p, addr)
	for i := range p[:n] {
		if a := addr + uint64(i); a-z.lo < z.n {
			p[i] = 0
		}
	}
	return n, err
}

func BenchmarkUnwindRecursion(b *testing.B) {
	p := getPatient(b, "rec", patient.O2)
	cf, mem, space := openCore(b, p)
	th := cf.Threads[0]
	frames := 0
	b.ResetTimer()
	for b.Loop() {
		res := unwind.Unwind(th.Regs, mem, space, unwind.Options{MaxDepth: 5000})
		frames += len(res.Frames)
	}
	b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
}
