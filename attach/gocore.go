package attach

import (
	"fmt"

	"github.com/hangdoc/hangdoc/attach/core"
	"github.com/hangdoc/hangdoc/attach/goproc"
	"github.com/hangdoc/hangdoc/attach/unwind"
	"github.com/hangdoc/hangdoc/stacks"
)

// coreThreads reads the goroutines of a Go program's core into proc, with the
// reader a live attach uses (attach/goproc) over the core's memory and
// its threads' registers: proc.Threads are the goroutines, proc.OSThreads
// the OS threads. It returns false when the program is not Go, or with a
// note when it is but its goroutines could not be read (no DWARF, a
// damaged core): the OS threads are then read as for any program.
func (goRuntime) coreThreads(c *coreProcess) (read bool, note string) {
	cf, mods, mem, proc, threads, opts := c.cf, c.mods, c.mem, c.proc, c.threads, c.opts
	exe := mods.exeHost(opts)
	if exe == "" {
		return false, ""
	}
	version, isGo := goproc.Version(exe)
	if !isGo {
		return false, ""
	}
	const fallback = "goroutines not read, OS threads shown instead: "
	defer func() {
		// delve is not meant to panic on a damaged core either; if it
		// does, the OS threads are still worth reading.
		if p := recover(); p != nil {
			proc.Threads, proc.OSThreads = nil, nil
			read, note = false, fmt.Sprintf("%sinternal error: %v", fallback, p)
		}
		if !read {
			// Runtime still says Go: the heuristics then know these
			// threads are not where a Go program's hang shows.
			proc.Runtime = version
		}
	}()
	if cf.Arch != unwind.AMD64 {
		return false, fallback + "goroutines are read from x86-64 cores only"
	}
	if err := sameFirstPage(cf, mods.exe, exe); err != nil {
		return false, fallback + err.Error()
	}
	entry, ok := cf.AuxVal(core.AtEntry)
	if !ok {
		return false, fallback + "the core has no auxiliary vector (NT_AUXV) to place the executable by"
	}
	r, err := goproc.OpenCore(proc.Pid, exe, entry, mem, opts.GoWithoutDWARF)
	if err != nil {
		return false, fallback + err.Error()
	}
	regs := make([]goproc.ThreadRegs, 0, len(threads))
	for _, th := range threads {
		regs = append(regs, goproc.ThreadRegs{Tid: th.TID, Regs: corePtraceRegs(th)})
	}
	res, err := r.Read(regs, goproc.Options{MaxDepth: opts.MaxDepth, Threads: true})
	if err != nil {
		return false, fallback + err.Error()
	}
	if len(res.Goroutines) == 0 {
		return false, fallback + "the core's runtime lists no goroutine"
	}
	proc.Runtime = r.GoVersion()
	for _, g := range res.Goroutines {
		g.SetSamples([]stacks.Sample{{State: g.State, Stack: g.Stack}})
		proc.Threads = append(proc.Threads, g)
	}
	for _, th := range threads {
		t := &stacks.Thread{Tid: th.TID, State: "R", Stack: res.OSThreads[th.TID]}
		if th.TID == proc.Pid {
			t.Name = commName(cf.Name)
		}
		if sc, blocked := coreSyscall(cf, mem, th); blocked {
			t.State, t.Wait = "S", waitOf(sc)
		}
		t.SetSamples([]stacks.Sample{{State: t.State, Stack: t.Stack, Wait: t.Wait}})
		if th.TID == proc.Pid {
			proc.State = t.State
		}
		proc.OSThreads = append(proc.OSThreads, t)
	}
	proc.Notes = append(proc.Notes, res.Notes...)
	return true, ""
}

// corePtraceRegs is a core thread's NT_PRSTATUS as PTRACE_GETREGS gives
// it for a live thread (what goproc reads); the registers the core
// reader keeps no copy of (segments, flags) are zero, which delve does
// not use.
func corePtraceRegs(th core.Thread) goproc.Regs {
	v := &th.Regs.Val
	return goproc.Regs{
		R15: v[15], R14: v[14], R13: v[13], R12: v[12], Rbp: v[unwind.RBP], Rbx: v[unwind.RBX],
		R11: v[11], R10: v[10], R9: v[9], R8: v[unwind.R8],
		Rax: uint64(th.RAX), Rcx: v[unwind.RCX], Rdx: v[unwind.RDX], Rsi: v[unwind.RSI], Rdi: v[unwind.RDI],
		Orig_rax: uint64(th.OrigRAX), Rip: v[unwind.RIP], Rsp: v[unwind.RSP],
		Fs_base: th.FSBase, Gs_base: th.GSBase,
	}
}
