package attach

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach/core"
	"github.com/hangdoc/hangdoc/attach/module"
	"github.com/hangdoc/hangdoc/attach/unwind"
	"github.com/hangdoc/hangdoc/stacks"
)

// CoreOptions says where to find what a core file leaves out: the
// mapped files themselves (a core holds their names and the memory the
// process wrote, not their code, symbols or unwind tables).
type CoreOptions struct {
	// Exe is the executable the process ran (--exe). It replaces the
	// file the core names for the executable: use it when that path is
	// missing on this machine, or holds another build.
	Exe string
	// Root is the directory under which the files the core names are
	// looked up ("/", the default, for cores of this machine; a copy of
	// the other machine's files otherwise). Separate debug files are
	// looked up under it too.
	Root string
	// MaxDepth bounds the frames of each stack (default 512).
	MaxDepth int
	// GoWithoutDWARF reads a Go program's goroutines from the runtime's
	// structures by its release's layout even when the executable has
	// DWARF (tests compare the two readers on one core).
	GoWithoutDWARF bool
	// Debuginfod says how debug files missing on disk are fetched.
	Debuginfod DebuginfodOptions

	fetch *module.Debuginfod
}

// ErrNoStacks says that a core gave nothing to diagnose: no thread, or
// no thread whose stack could be unwound past its first frame.
var ErrNoStacks = errors.New("no thread's stack could be unwound from the core")

// Core reads an x86-64 ELF core file (from the kernel, gdb's gcore, or
// systemd-coredump once decompressed: `coredumpctl dump PID >core`) into
// a snapshot of one process at one instant. Its
// threads are unwound and symbolised with the same code as a live
// attach, over the core's memory and the files its NT_FILE note names
// (under opts.Root); mutex owners, futex words and joined threads are
// read from the core's memory as a live attach reads them from the
// process. A mapped file that is missing or is not the build the process
// mapped (its build id, when the core holds it, says so) is a note on
// the process and its frames stay unnamed; Core fails only when the core
// cannot be read at all or no stack could be unwound (ErrNoStacks). A
// damaged or truncated core gives what could be read and says so in a
// note.
//
// A core does not tell everything a live process does: no CPU figures
// (one instant: a spin looks like any running thread), no thread names
// but the main thread's, no file descriptor targets, and no parent: a
// forked child's lineage (Process.Fork) is unknown, so a lock held by a
// parent thread at fork() looks like one whose owner exited.
func Core(path string, opts CoreOptions) (snap *stacks.Snapshot, err error) {
	defer func() {
		// The readers below are meant never to panic on a hostile core;
		// if one does, it must not take hangdoc down.
		if p := recover(); p != nil {
			snap, err = nil, fmt.Errorf("internal error reading the core: %v", p)
		}
	}()
	if opts.Root == "" {
		opts.Root = "/"
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = 512
	}
	if opts.Exe != "" {
		abs, err := filepath.Abs(opts.Exe)
		if err != nil {
			return nil, fmt.Errorf("--exe %s: %v", opts.Exe, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("--exe %s: %w", opts.Exe, unwrapPathError(err))
		}
		opts.Exe = abs
	}
	cf, damage := core.Open(path)
	if cf == nil {
		return nil, openError(damage)
	}
	opts.fetch = opts.Debuginfod.client()
	defer cf.Close()
	taken := time.Time{}
	if fi, err := os.Stat(path); err == nil {
		taken = fi.ModTime().UTC() // when the core was written
	}

	var notes []string
	if damage != nil {
		notes = append(notes, damageNote(damage))
	}
	if len(cf.Threads) == 0 {
		return nil, fmt.Errorf("%w: it holds no thread (no NT_PRSTATUS note)%s", ErrNoStacks, because(notes))
	}
	pid := cf.PID
	if pid <= 0 {
		// No NT_PRPSINFO: the main thread's id is the process's, and it
		// is the lowest of a process's thread ids unless they wrapped.
		pid = slices.MinFunc(cf.Threads, func(a, b core.Thread) int { return a.TID - b.TID }).TID
		notes = append(notes, fmt.Sprintf("the core has no process note (NT_PRPSINFO): pid %d is the lowest thread id", pid))
	}

	if opts.Exe != "" {
		if err := exeIsCoreBuild(cf, opts.Exe); err != nil {
			return nil, err
		}
	}
	mods := loadCoreModules(cf, opts)
	notes = append(append(notes, mods.notes...), fetchedNotes(opts.fetch)...)
	mem := cf.WithFiles(opts.Root)
	mem.Resolve = mods.resolve
	defer mem.Close()

	proc := &stacks.Process{
		Pid: pid, PPid: cf.PPID, Exe: mods.exe,
		Cmdline: strings.Fields(cf.Args), State: "S",
		Modules: mods.space.Modules(),
	}
	threads := slices.Clone(cf.Threads)
	if i := slices.IndexFunc(threads, func(t core.Thread) bool { return t.TID == cf.PPID }); cf.PPID > 0 && i >= 0 &&
		!slices.ContainsFunc(threads, func(t core.Thread) bool { return t.TID == pid }) {
		// qemu-user does not update its thread ids at fork(): the core
		// of a forked child names its thread by the parent's id, which
		// no thread of the child can have.
		notes = append(notes, fmt.Sprintf("thread %d of the core has the parent's id (qemu-user writes it for a forked child): read as thread %d, the process's own", cf.PPID, pid))
		threads[i].TID = pid
	}
	slices.SortStableFunc(threads, func(a, b core.Thread) int { return a.TID - b.TID })
	snap = &stacks.Snapshot{
		Schema:    stacks.Schema,
		Source:    "core",
		Taken:     taken,
		Samples:   1,
		Evidence:  stacks.Evidence{Owners: true, Syscalls: true},
		Processes: []*stacks.Process{proc},
	}
	c := &coreProcess{cf: cf, mods: mods, mem: mem, proc: proc, threads: threads, opts: opts}
	for _, rt := range runtimes {
		if read, note := rt.coreThreads(c); read {
			proc.Notes = append(notes, proc.Notes...)
			proc.Notes = append(proc.Notes, signalNote(threads)...)
			return snap, nil
		} else if note != "" {
			notes = append(notes, note)
		}
	}
	var paths []string
	for _, m := range cf.Mappings {
		paths = append(paths, m.Path)
	}
	lc := libcOf(paths, mods.exeHost(opts))
	if lc == musl {
		notes = append(notes, muslNote)
	}
	symbols := map[uint64][]stacks.Frame{}
	unwound := 0
	var stops []string
	for _, th := range threads {
		t := &stacks.Thread{Tid: th.TID, State: "R"}
		if th.TID == pid {
			t.Name = commName(cf.Name) // the only thread name a core holds
		}
		res := unwind.Unwind(th.Regs, mem, mods.space, unwind.Options{MaxDepth: opts.MaxDepth, Arch: cf.Arch})
		t.Stack = symbolize(mods.space, symbols, res, &t.Notes)
		if sc, blocked := coreSyscall(cf, mem, th); blocked {
			t.State = "S"
			t.Wait = waitOf(sc)
			lockEvidence(mem, mods.space, lc, t.Wait, t.Stack)
		}
		if stackRead(res, t.Stack) {
			unwound++
		} else if len(stops) < 3 {
			stops = append(stops, fmt.Sprintf("thread %d: %s", th.TID, res.Stop))
		}
		nameUnplaced(cf, t.Stack)
		t.SetSamples([]stacks.Sample{{State: t.State, Stack: t.Stack, Wait: t.Wait}})
		if th.TID == pid {
			proc.State = t.State
		}
		proc.Threads = append(proc.Threads, t)
	}
	if unwound == 0 {
		return nil, fmt.Errorf("%w: %s%s", ErrNoStacks, strings.Join(stops, "; "), because(notes))
	}
	notes = append(notes, signalNote(threads)...)
	proc.Notes = notes
	for _, rt := range runtimes {
		rt.coreMerge(c, &snap.Evidence)
	}
	return snap, nil
}

// coreProcess is a core's process as the runtimes read it (runtime.go).
type coreProcess struct {
	cf      *core.File
	mods    *coreModules
	mem     *core.FileBacked
	proc    *stacks.Process
	threads []core.Thread // by thread id
	opts    CoreOptions
}

// signalNote names the signal that wrote a kernel core.
func signalNote(threads []core.Thread) []string {
	for _, th := range threads {
		if th.Signal != 0 && th.Signal != int(unix.SIGSTOP) {
			// The kernel gives every thread the signal that dumped the core.
			return []string{fmt.Sprintf("the core was written on signal %d (%s)", th.Signal, unix.SignalName(unix.Signal(th.Signal)))}
		}
	}
	return nil
}

// nameUnplaced gives a frame in a file that is not placed (missing,
// another build) the path the core names for it, so that a report says
// where the unnamed frame is. Its Offset stays unknown: without the file
// there is no load bias.
func nameUnplaced(cf *core.File, st []stacks.Frame) {
	for i := range st {
		f := &st[i]
		if f.Module != "" || f.PC == 0 {
			continue
		}
		for _, m := range cf.Mappings {
			if m.Start <= f.PC && f.PC < m.End {
				f.Module = strings.TrimSuffix(m.Path, deletedSuffix)
				break
			}
		}
	}
}

// stackRead says whether an unwind found more than where the thread
// stood: at least two machine frames (inlined ones are not unwound) in
// known code, or the whole stack.
func stackRead(res unwind.Result, frames []stacks.Frame) bool {
	known := 0
	for _, f := range frames {
		if f.Module != "" && !f.Inlined {
			known++
		}
	}
	return known >= 2 || known == 1 && res.Complete()
}

// because appends the notes that explain a failure.
func because(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return " (" + strings.Join(notes, "; ") + ")"
}

// damageNote says in one line what core.Open found wrong: the first
// problem and how many more.
func damageNote(err error) string {
	var leaves []error
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		leaves = append(leaves, e)
	}
	walk(err)
	msg := "the core file is truncated or damaged: " + leaves[0].Error()
	if len(leaves) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(leaves)-1)
	}
	return msg + "; memory in the missing parts (stacks, locks) cannot be read"
}

// openError says why core.Open could read nothing: a file that is no
// x86-64 core is said as such, anything else is damage.
func openError(err error) error {
	var fe *core.FormatError
	if !errors.As(err, &fe) {
		return unwrapPathError(err)
	}
	if strings.Contains(fe.Msg, "truncated") || fe.What == "ELF header" && fe.Off <= 18 {
		return err // "truncated" already, or not an x86-64 core at all
	}
	return fmt.Errorf("the core file is truncated or damaged: %w", err)
}

// commName is the kernel's name of a thread (its comm), at most 15
// bytes: gcore fills the process name's 16 bytes without a NUL.
func commName(s string) string {
	const taskCommLen = 16
	if len(s) >= taskCommLen {
		return s[:taskCommLen-1]
	}
	return s
}

// unwrapPathError drops the *fs.PathError's path: callers name the file.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
