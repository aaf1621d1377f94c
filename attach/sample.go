package attach

import (
	"fmt"
	"slices"
	"time"

	"github.com/hangdoc/hangdoc/attach/module"
	"github.com/hangdoc/hangdoc/attach/unwind"
	"github.com/hangdoc/hangdoc/stacks"
)

// clockTicks is USER_HZ, the unit of CPU times in /proc: 100 on every
// Linux architecture hangdoc runs on.
const clockTicks = 100

// addressSpace is what the sampler needs of a process's loaded modules.
type addressSpace interface {
	unwind.Tables
	SymbolizeInline(pc uint64) []stacks.Frame
	FuncBefore(pc uint64) (uint64, bool)
	DataSymbol(addr uint64) string
	Modules() []stacks.Module
}

// target is one process being sampled.
type target struct {
	pid     int
	stat    taskStat
	maps    []module.Mapping
	space   addressSpace
	proc    *stacks.Process
	threads map[int]*threadAcc
	exited  bool
	symbols map[uint64][]stacks.Frame // by lookup PC, inlined frames first: threads share most frames
	// sockets caches the addresses of socket inodes: a thousand threads
	// in recv must not read /proc/net's tables a thousand times a sample.
	sockets map[string]string
	// runtime reads the language runtime the process runs (Go, CPython,
	// a JVM: runtime.go); nil for a native program.
	runtime runtimeReader
	// libc lays out the process's mutexes (libc.go).
	libc libc
}

// threadAcc accumulates one thread's samples.
type threadAcc struct {
	t         *stacks.Thread
	startT    uint64 // tells a tid reused by a new thread
	lastTicks uint64
	ticks     uint64 // CPU ticks over the window
	seen      int
}

// sampler holds what lives across samples and targets.
type sampler struct {
	opts   Options
	tracer *tracer
	// Stops counts ptrace stops; MaxHeld is the longest one.
	stops   int
	maxHeld time.Duration
	// stackBuf is reused for every blocked thread's stack copy: the copy
	// lives only while that thread is unwound.
	stackBuf []byte
	// peers finds the processes at the other end of the pipes and
	// sockets threads wait on; made on first use (peers.go).
	peers *peerIndex
}

// sampleTarget takes one sample of every thread of tg.
func (s *sampler) sampleTarget(tg *target, first bool) {
	if tg.runtime != nil && tg.runtime.sample(s, tg, first) {
		return
	}
	tids, ok := tg.tasks()
	if !ok {
		return
	}
	alive := 0
	for _, tid := range tids {
		st, err := readStat(tg.pid, tid)
		if err != nil || st.State == 'Z' || st.State == 'X' {
			continue // exited: what earlier samples read stays
		}
		alive++
		acc := threadAccFor(tg.threads, &tg.proc.Threads, tid, st, first)
		acc.seen++
		delta := st.Ticks - acc.lastTicks
		acc.lastTicks = st.Ticks
		acc.ticks += delta
		acc.t.Name, acc.t.State = st.Name, string(st.State)
		sm := stacks.Sample{State: string(st.State), CPUTicks: delta}
		sm.Stack, sm.Wait = s.stackOf(tg, tid, st, &acc.t.Notes)
		acc.t.AddSample(sm)
		acc.t.Stack, acc.t.Wait = sm.Stack, sm.Wait
	}
	if alive == 0 {
		tg.exited = true
		return
	}
	if tg.runtime != nil {
		tg.runtime.merge(tg)
	}
}

// threadAccFor returns the accumulator of thread tid in accs, making one
// (and listing its thread in list) for a thread not seen before, or
// whose id a new thread took over.
func threadAccFor(accs map[int]*threadAcc, list *[]*stacks.Thread, tid int, st taskStat, first bool) *threadAcc {
	acc := accs[tid]
	if acc != nil && acc.startT != st.StartT {
		acc.t.Notes = append(acc.t.Notes, fmt.Sprintf("thread id %d was reused by a new thread during sampling", tid))
		acc = nil
	}
	if acc == nil {
		acc = &threadAcc{t: &stacks.Thread{Tid: tid}, startT: st.StartT, lastTicks: st.Ticks}
		if !first {
			acc.t.Notes = append(acc.t.Notes, "thread started during sampling")
		}
		accs[tid] = acc
		*list = append(*list, acc.t)
	}
	return acc
}

// tasks lists the target's threads, or marks it exited and says false
// when it is gone. A pid whose process started at another time is a new
// process that reused it: the one we came for has exited.
func (tg *target) tasks() ([]int, bool) {
	if st, err := readStat(tg.pid, tg.pid); err != nil || st.StartT != tg.stat.StartT {
		tg.exited = true
		return nil, false
	}
	tids, err := listTasks(tg.pid)
	if err != nil {
		tg.exited = true
		return nil, false
	}
	return tids, true
}

// stackOf reads one thread's stack, stopping it only when /proc cannot
// give what the unwinder needs.
func (s *sampler) stackOf(tg *target, tid int, st taskStat, notes *[]string) ([]stacks.Frame, *stacks.Wait) {
	sc, err := readSyscall(tg.pid, tid)
	if err != nil {
		addNote(notes, fmt.Sprintf("syscall state unreadable: %v", err))
		return nil, nil
	}
	var wait *stacks.Wait
	if !sc.Running {
		wait = waitOf(sc)
		wait.Wchan = readWchan(tg.pid, tid)
		if wait.Fd > 0 || wait.Syscall == "read" {
			wait.FdTarget = tg.fdTarget(wait.Fd)
		}
		s.crossProcess(tg, wait, sc)
	}
	frames := s.unwindThread(tg, tid, sc, notes)
	tg.lockEvidence(wait, frames)
	return frames, wait
}

// unwindThread unwinds from /proc's view of a blocked thread, or from
// its registers under a stop when it runs or /proc's view is not enough.
func (s *sampler) unwindThread(tg *target, tid int, sc syscallState, notes *[]string) []stacks.Frame {
	if !sc.Running {
		res, ok := s.unwindBlocked(tg, tid, sc)
		if ok {
			return symbolize(tg.space, tg.symbols, res, notes)
		}
		if how := stopChanges(syscallName(sc.Arch, sc.Nr)); how != "" && res.NeedsRegs {
			addNote(notes, fmt.Sprintf("stack read without stopping the thread, up to the frame whose caller needs registers: a stop would %s", how))
			return symbolize(tg.space, tg.symbols, res, notes)
		}
	}
	stp, err := s.stop(tg, tid)
	if err != nil {
		addNote(notes, err.Error())
		return nil
	}
	res := unwind.Unwind(stp.Regs, &unwind.Overlay{Base: stp.Base, Data: stp.Stack, Next: liveMemory(tg.pid)}, tg.space, unwind.Options{MaxDepth: s.opts.MaxDepth, Arch: hostArch})
	return symbolize(tg.space, tg.symbols, res, notes)
}

// stopChanges says how a ptrace stop would change what a blocked system
// call returns, "" when the kernel restarts it unseen. The stop wakes the
// thread like a signal: a pipe or socket write that has moved part of
// its buffer returns the short count, and the calls signal(7) lists
// under "Interruption of system calls by stop signals" fail with EINTR
// (sockets only when a timeout is set, which /proc does not show).
// gdb's and eu-stack's attaches do both; hangdoc reads such a thread's
// stack as far as /proc's stack pointer and program counter take it.
func stopChanges(call string) string {
	switch call {
	case "write", "writev", "pwrite64", "sendto", "sendmsg", "sendmmsg":
		return "make its `" + call + "` return a short count"
	case "epoll_wait", "epoll_pwait", "epoll_pwait2", "semop", "semtimedop", "rt_sigtimedwait",
		"recvfrom", "recvmsg", "recvmmsg", "accept", "accept4":
		return "make its `" + call + "` fail with EINTR"
	}
	return ""
}

// unwindBlocked unwinds a thread blocked in the kernel from the stack
// pointer and program counter /proc gives, without stopping it. The
// stack is copied and the syscall state read again: if the thread moved
// meanwhile, or the unwinder needs registers /proc does not give, the
// caller stops the thread instead.
func (s *sampler) unwindBlocked(tg *target, tid int, sc syscallState) (unwind.Result, bool) {
	base := sc.SP - redZone
	n := uint64(stackCopyBytes)
	if m, ok := findMapping(tg.maps, sc.SP); ok && m.End-base < n {
		n = m.End - base
	}
	if cap(s.stackBuf) < stackCopyBytes {
		s.stackBuf = make([]byte, stackCopyBytes)
	}
	buf := s.stackBuf[:n]
	k, _ := readMemory(tg.pid, buf, base)
	again, err := readSyscall(tg.pid, tid)
	if err != nil || again != sc {
		return unwind.Result{}, false
	}
	var regs unwind.Regs
	regs.Set(hostArch.SP, sc.SP)
	regs.Set(hostArch.PC, sc.PC)
	res := unwind.Unwind(regs, &unwind.Overlay{Base: base, Data: buf[:k], Next: liveMemory(tg.pid)}, tg.space, unwind.Options{MaxDepth: s.opts.MaxDepth, Arch: hostArch})
	return res, !res.NeedsRegs
}

// stackCopyBytes is how much of a stack is copied in one read; deeper
// frames are read from the live process.
const stackCopyBytes = 32 << 10

// stop takes a thread's registers under a bounded ptrace stop.
func (s *sampler) stop(tg *target, tid int) (stopped, error) {
	stackEnd := func(sp uint64) uint64 {
		if m, ok := findMapping(tg.maps, sp); ok {
			return m.End
		}
		return sp + stackCopyBytes
	}
	stp, err := s.tracer.stopThread(tg.pid, tid, s.opts.StopTimeout, stackEnd, stackCopyBytes)
	s.stops++
	if stp.Held > s.maxHeld {
		s.maxHeld = stp.Held
	}
	if err == errStopTimeout {
		// The thread is still seized; ending the tracer's OS thread makes
		// the kernel release it.
		s.tracer.close()
		s.tracer = newTracer()
		return stp, fmt.Errorf("thread %d did not stop within %v; let go, stack unknown", tid, s.opts.StopTimeout)
	}
	if err != nil && isPermission(err) {
		return stp, fmt.Errorf("thread %d could not be stopped (%v): is another debugger attached? (`grep TracerPid /proc/%d/status`)", tid, err, tg.pid)
	}
	return stp, err
}

// symbolize turns an unwound stack into frames, names looked up in space
// and kept in cache by lookup PC (threads share most frames); unwinder
// stops other than the end of the stack become a note. Live attaches and
// core files share it.
func symbolize(space addressSpace, cache map[uint64][]stacks.Frame, res unwind.Result, notes *[]string) []stacks.Frame {
	out := make([]stacks.Frame, 0, len(res.Frames))
	for _, f := range res.Frames {
		frs, ok := cache[f.LookupPC]
		if !ok {
			frs = space.SymbolizeInline(f.LookupPC)
			if start, ok := space.FuncBefore(f.LookupPC); ok && f.Entry > start {
				// the symbol is the exported function before this one
				// (musl's libc.so names none of its internals); the
				// inlined frames come from DWARF and stay
				frs = slices.Clone(frs)
				frs[len(frs)-1].Func = ""
			}
			cache[f.LookupPC] = frs
		}
		for _, fr := range frs {
			fr.PC = f.PC
			if fr.Module != "" && f.PC >= f.LookupPC {
				fr.Offset += f.PC - f.LookupPC
			}
			fr.Signal = f.Signal && !fr.Inlined
			out = append(out, fr)
		}
	}
	for _, f := range res.Frames {
		if f.Method == "scan" {
			addNote(notes, "no unwind tables for part of the stack (musl's libc has almost none): callers there were found by scanning the stack for return addresses (a guess that can miss or add a frame)")
			break
		}
	}
	if res.Stop != "" && res.Stop != unwind.StopEnd {
		addNote(notes, "stack may be incomplete: "+res.Stop)
	}
	return out
}

func addNote(notes *[]string, n string) {
	for _, have := range *notes {
		if have == n {
			return
		}
	}
	*notes = append(*notes, n)
}

// waitOf names what a blocked thread waits on.
func waitOf(sc syscallState) *stacks.Wait {
	w := &stacks.Wait{Nr: sc.Nr, Syscall: syscallName(sc.Arch, sc.Nr)}
	switch w.Syscall {
	case "futex":
		w.Addr, w.Op = sc.Args[0], futexOp(sc.Args[1])
	case "read", "write", "pread64", "pwrite64", "readv", "writev", "recvfrom", "recvmsg", "sendto", "sendmsg", "accept", "accept4", "connect", "flock", "fcntl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "ioctl", "fsync", "fdatasync":
		w.Fd = int(int32(sc.Args[0]))
	}
	return w
}
