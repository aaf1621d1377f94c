package heuristics

// Small builders of hand-made snapshots for the tests of the signatures
// that are not about a lock owner (spin-wait-starved,
// fork-after-accelerator-init, progressing, io-wait, sleeping) and of the
// known-issue rules. Names start with nb so they stay apart from the lock
// signatures' builders.

import (
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/stacks"
)

// nbSnap is a live-attach-like snapshot: CPU figures and syscalls read
// when cpu is set, samples taken 500ms apart.
func nbSnap(cpu bool, procs ...*stacks.Process) *stacks.Snapshot {
	n := 0
	for _, p := range procs {
		for _, t := range p.Threads {
			if len(t.Samples()) > n {
				n = len(t.Samples())
			}
		}
	}
	return &stacks.Snapshot{
		Schema:    stacks.Schema,
		Source:    "attach",
		Samples:   n,
		Interval:  stacks.Duration(500 * time.Millisecond),
		Evidence:  stacks.Evidence{Owners: cpu, CPU: cpu, Syscalls: cpu, Lineage: cpu},
		Processes: procs,
	}
}

// nbProc is a process; its exe is /usr/bin/<name of the first thread>.
func nbProc(pid int, threads ...*stacks.Thread) *stacks.Process {
	p := &stacks.Process{Pid: pid, PPid: 1, State: "S", Threads: threads}
	if len(threads) > 0 {
		p.Exe = "/usr/bin/" + threads[0].Name
		p.Cmdline = []string{p.Exe}
		p.State = threads[0].State
	}
	return p
}

// nbForked makes p a child forked without exec from parent.
func nbForked(p *stacks.Process, parent int, parentTids []int, parentModules ...string) *stacks.Process {
	p.PPid = parent
	p.Fork = &stacks.Fork{ParentPid: parent, ParentThreads: parentTids, ParentModules: parentModules}
	return p
}

// nbModules maps objects into p.
func nbModules(p *stacks.Process, paths ...string) *stacks.Process {
	for i, path := range paths {
		p.Modules = append(p.Modules, stacks.Module{Path: path, Start: uint64(0x7f0000000000 + i*0x100000), End: uint64(0x7f0000000000 + i*0x100000 + 0x80000)})
	}
	return p
}

// nbFrames builds a stack, innermost first, from "func" or
// "func@module" (module a path); program counters are fixed per name so
// that equal stacks are equal to the PC.
func nbFrames(specs ...string) []stacks.Frame {
	var out []stacks.Frame
	for _, s := range specs {
		fn, mod, _ := strings.Cut(s, "@")
		var h uint64 = 1469598103934665603
		for _, c := range s {
			h = (h ^ uint64(c)) * 1099511628211
		}
		out = append(out, stacks.Frame{Func: fn, Module: mod, PC: 0x400000 + h%0x100000, Offset: h % 0x100000})
	}
	return out
}

// nbRunning is a sample of a thread on a CPU.
func nbRunning(ticks uint64, st []stacks.Frame) stacks.Sample {
	return stacks.Sample{State: "R", CPUTicks: ticks, Stack: st}
}

// nbBlocked is a sample of a thread blocked in a syscall.
func nbBlocked(syscall string, st []stacks.Frame) stacks.Sample {
	nr := map[string]int64{"read": 0, "poll": 7, "select": 23, "nanosleep": 35, "recvfrom": 45, "accept": 43,
		"wait4": 61, "futex": 202, "clock_nanosleep": 230, "epoll_wait": 232, "rt_sigtimedwait": 128}[syscall]
	return stacks.Sample{State: "S", Stack: st, Wait: &stacks.Wait{Syscall: syscall, Nr: nr}}
}

// nbOnFd is a sample blocked in an fd syscall on fd, which is target.
func nbOnFd(syscall string, fd int, target string, st []stacks.Frame) stacks.Sample {
	s := nbBlocked(syscall, st)
	s.Wait.Fd, s.Wait.FdTarget = fd, target
	return s
}

// nbOnMutex is a sample blocked on a pthread mutex owned by owner.
func nbOnMutex(owner int, symbol string, st []stacks.Frame) stacks.Sample {
	s := nbBlocked("futex", st)
	s.Wait.Addr = 0x7f1234560000
	s.Wait.Op = "FUTEX_WAIT_PRIVATE"
	s.Wait.Mutex = &stacks.Mutex{Addr: 0x7f1234560000, Lock: 2, Owner: owner, Symbol: symbol}
	return s
}

// nbJoining is a sample blocked in pthread_join on tid.
func nbJoining(tid int) stacks.Sample {
	s := nbBlocked("futex", nbFrames("__futex_abstimed_wait_common", "__pthread_clockjoin_ex", "main"))
	s.Wait.JoinTid = tid
	return s
}

// nbTimes repeats a sample n times; a running sample keeps its ticks
// from the second on (the first has nothing to compare with).
func nbTimes(n int, s stacks.Sample) []stacks.Sample {
	var out []stacks.Sample
	for i := 0; i < n; i++ {
		x := s
		if i == 0 {
			x.CPUTicks = 0
		}
		out = append(out, x)
	}
	return out
}

// nbThread is a thread with samples; State, Stack and Wait are the last
// sample's, CPU is computed from the ticks at 100 Hz over 500ms.
func nbThread(tid int, name string, samples ...stacks.Sample) *stacks.Thread {
	t := &stacks.Thread{Tid: tid, Name: name, ThreadRare: &stacks.ThreadRare{SampleList: samples}}
	if len(samples) > 0 {
		last := samples[len(samples)-1]
		t.State, t.Stack, t.Wait = last.State, last.Stack, last.Wait
	}
	if len(samples) > 1 {
		var sum uint64
		for _, s := range samples[1:] {
			sum += s.CPUTicks
		}
		t.CPU = float64(sum) / 100 / (0.5 * float64(len(samples)-1)) * 100
	}
	return t
}

// nbDump is a thread as a pasted gdb dump gives it: one stack, no
// state, no syscall, no samples.
func nbDump(tid int, name string, specs ...string) *stacks.Thread {
	return &stacks.Thread{Tid: tid, Name: name, Stack: nbFrames(specs...)}
}

// nbMatch runs one signature's matcher over a snapshot.
func nbMatch(t *testing.T, id string, snap *stacks.Snapshot) []Diagnosis {
	t.Helper()
	s := Lookup(id)
	if s == nil {
		t.Fatalf("signature %s is not registered", id)
	}
	return s.Match(newAnalysis(snap))
}

// nbIDs lists the ids Diagnose gives, in order.
func nbIDs(ds []Diagnosis) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

// nbFind returns the diagnoses with an id.
func nbFind(ds []Diagnosis, id string) []Diagnosis {
	var out []Diagnosis
	for _, d := range ds {
		if d.ID == id {
			out = append(out, d)
		}
	}
	return out
}

func nbHasTid(d Diagnosis, tid int) bool {
	for _, x := range d.Tids {
		if x == tid {
			return true
		}
	}
	return false
}
