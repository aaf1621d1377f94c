package attach

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
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
	"github.com/hangdoc/hangdoc/attach/goproc"
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
	if read, note := goCore(cf, mods, mem, proc, threads, opts); read {
		proc.Notes = append(notes, proc.Notes...)
		proc.Notes = append(proc.Notes, signalNote(threads)...)
		return snap, nil
	} else if note != "" {
		notes = append(notes, note)
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
		t.Samples = []stacks.Sample{{State: t.State, Stack: t.Stack, Wait: t.Wait}}
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
	snap.Evidence.GIL = pythonInCore(proc, mods.space, mem) // Python frames (python.go)
	return snap, nil
}

// goCore reads the goroutines of a Go program's core into proc, with the
// reader a live attach uses (attach/goproc) over the core's memory and
// its threads' registers: proc.Threads are the goroutines, proc.OSThreads
// the OS threads. It returns false when the program is not Go, or with a
// note when it is but its goroutines could not be read (no DWARF, a
// damaged core): the OS threads are then read as for any program.
func goCore(cf *core.File, mods *coreModules, mem *core.FileBacked, proc *stacks.Process, threads []core.Thread, opts CoreOptions) (read bool, note string) {
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
		g.Samples = []stacks.Sample{{State: g.State, Stack: g.Stack}}
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
		t.Samples = []stacks.Sample{{State: t.State, Stack: t.Stack, Wait: t.Wait}}
		if th.TID == proc.Pid {
			proc.State = t.State
		}
		proc.OSThreads = append(proc.OSThreads, t)
	}
	proc.Notes = append(proc.Notes, res.Notes...)
	return true, ""
}

// exeIsCoreBuild refuses an --exe that is not the build the core's
// process ran: its symbols would name every frame wrong. The core's
// build id for the executable decides when it holds one, else the
// executable's first page (a Go binary has no GNU build id); nothing to
// compare passes.
func exeIsCoreBuild(cf *core.File, exe string) error {
	name := coreExePath(cf)
	var ms []core.Mapping
	for _, m := range cf.Mappings {
		if strings.TrimSuffix(m.Path, deletedSuffix) == name {
			ms = append(ms, m)
		}
	}
	if name == "" || len(ms) == 0 {
		return nil
	}
	if want, _, _ := coreBuildID(cf, ms); want != "" {
		f, err := modules.Open(exe, module.Options{OriginalPath: exe})
		if err != nil {
			return fmt.Errorf("--exe %s: %v", exe, err)
		}
		if f.BuildID != want {
			have := "has no build id"
			if f.BuildID != "" {
				have = "is build " + f.BuildID
			}
			return fmt.Errorf("%s is not the build the process ran (the core names build %s, it %s); pass that very executable with --exe", exe, want, have)
		}
		return nil
	}
	return sameFirstPage(cf, name, exe)
}

// sameFirstPage checks that exe is the build the process ran when the
// core holds the first page of its executable (the kernel and gcore
// dump it: ELF header, program headers, notes): a Go binary carries no
// GNU build id to compare, and delve reading the runtime with another
// build's debug information reads nonsense. Nothing to compare passes.
func sameFirstPage(cf *core.File, name, exe string) error {
	const page = 4096
	for _, m := range cf.Mappings {
		if m.Offset != 0 || strings.TrimSuffix(m.Path, deletedSuffix) != name || m.End-m.Start < page {
			continue
		}
		mapped := make([]byte, page)
		if n, _ := cf.ReadAt(mapped, m.Start); n < page {
			return nil
		}
		f, err := os.Open(exe)
		if err != nil {
			return err
		}
		defer f.Close()
		onDisk := make([]byte, page)
		n, _ := f.ReadAt(onDisk, 0)
		if !bytes.Equal(mapped[:n], onDisk[:n]) || n == 0 {
			return fmt.Errorf("%s is not the build the process ran (its first page differs from the one in the core); pass that very executable with --exe", exe)
		}
		return nil
	}
	return nil
}

// exeHost is the file on this machine the core's executable is read
// from: --exe, or the file its NT_FILE path names when that passed the
// checks (present, the same build); "" when there is none.
func (c *coreModules) exeHost(opts CoreOptions) string {
	if opts.Exe != "" {
		return opts.Exe
	}
	if c.exe == "" {
		return ""
	}
	for raw, host := range c.files {
		if strings.TrimSuffix(raw, deletedSuffix) == c.exe && host != "" {
			return host
		}
	}
	return ""
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

// coreSyscall reads the system call a core's thread was blocked in from
// its registers, as /proc/PID/task/TID/syscall gives it for a live one:
// orig_rax is the call, rdi, rsi, rdx, r10, r8 and r9 its arguments.
// A thread counts as blocked when the call was interrupted by the stop
// that wrote the core (rax holds -EINTR or one of the kernel's restart
// codes); a call that had returned, or none, means the thread was
// running in user space.
func coreSyscall(cf *core.File, mem unwind.Memory, th core.Thread) (syscallState, bool) {
	if cf.Arch == unwind.ARM64 {
		return coreSyscallARM64(mem, th)
	}
	if th.OrigRAX < 0 {
		return syscallState{}, false
	}
	switch th.RAX {
	case -int64(unix.EINTR),
		-512, // ERESTARTSYS
		-513, // ERESTARTNOINTR
		-514, // ERESTARTNOHAND
		-516: // ERESTART_RESTARTBLOCK
	default:
		return syscallState{}, false
	}
	r := th.Regs.Val
	return syscallState{
		Nr:   th.OrigRAX,
		Args: [6]uint64{r[unwind.RDI], r[unwind.RSI], r[unwind.RDX], r[10], r[unwind.R8], r[9]},
		SP:   r[unwind.RSP],
		PC:   r[unwind.RIP],
	}, true
}

// coreSyscallARM64 is coreSyscall for an arm64 core, whose NT_PRSTATUS
// does not record the call (no orig_x0): a thread is in one when its PC
// is at an svc #0 (the kernel's cores: the call is rewound to restart,
// x0 restored to its first argument) or just past one (qemu-user's: the
// call still runs on the host, or returned -EINTR to the thread that
// took the signal, whose first argument is then lost). x8 is its
// number, x0-x5 its arguments.
func coreSyscallARM64(mem unwind.Memory, th core.Thread) (syscallState, bool) {
	const svc0 = 0xd4000001
	r := th.Regs.Val
	at := func(pc uint64) bool {
		var b [4]byte
		n, _ := mem.ReadAt(b[:], pc)
		return n == 4 && binary.LittleEndian.Uint32(b[:]) == svc0
	}
	pc := r[unwind.PC]
	if !at(pc) && !at(pc-4) {
		return syscallState{}, false
	}
	sc := syscallState{
		Arch: unwind.ARM64, Nr: int64(r[unwind.X8]),
		Args: [6]uint64{r[0], r[1], r[2], r[3], r[4], r[5]},
		SP:   r[unwind.SP], PC: pc,
	}
	if x0 := int64(r[0]); x0 < 0 && x0 >= -4095 && !at(pc) {
		// x0 is the call's result (-EINTR), not its argument: take the
		// register the code copied the argument from, if it did.
		sc.Args[0] = 0
		if m, ok := copiedToX0(mem, pc-4); ok && th.Regs.Has(m) {
			sc.Args[0] = r[m]
		}
	}
	return sc, true
}

// copiedToX0 finds, in the few instructions before the svc at pc, the
// "mov x0, xM" that set its first argument, and returns M, unless an
// instruction after it writes x0 or xM: glibc's futex waits keep the
// futex's address in a callee-saved register (mov x0, x19; …; svc #0).
func copiedToX0(mem unwind.Memory, svc uint64) (int, bool) {
	const movX0 = 0xaa0003e0 // orr x0, xzr, xM
	written := map[uint32]bool{}
	for i := uint64(1); i <= 8; i++ {
		var b [4]byte
		if n, _ := mem.ReadAt(b[:], svc-4*i); n != 4 {
			return 0, false
		}
		insn := binary.LittleEndian.Uint32(b[:])
		if insn&^(31<<16) == movX0 {
			m := (insn >> 16) & 31
			return int(m), m != 31 && !written[m]
		}
		rd := insn & 31
		if rd == 0 || insn>>26&7 == 5 { // writes x0, or a branch: give up
			return 0, false
		}
		written[rd] = true
	}
	return 0, false
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

// coreModules is a core's address space as module sees it.
type coreModules struct {
	space *module.Space
	notes []string
	exe   string // the executable's path, as the core names it
	// files maps an NT_FILE path to the file read for it on this
	// machine; "" when none is usable (missing, another build).
	files map[string]string
}

// resolve implements core.FileBacked.Resolve: code the core left out is
// read only from the files that passed the checks.
func (c *coreModules) resolve(path string) (string, bool) {
	host := c.files[path]
	return host, host != ""
}

const deletedSuffix = " (deleted)"

// loadCoreModules opens the files a core's NT_FILE note names (under
// opts.Root, the executable from opts.Exe when given), checks each
// against the build id the core holds for it, and places them; the vDSO
// comes from the core's memory.
func loadCoreModules(cf *core.File, opts CoreOptions) *coreModules {
	c := &coreModules{space: module.NewSpace(), files: map[string]string{}}
	c.exe = coreExePath(cf)
	// One file per path, its mappings in address order.
	var paths []string
	byPath := map[string][]core.Mapping{}
	for _, m := range cf.Mappings {
		if _, ok := byPath[m.Path]; !ok {
			paths = append(paths, m.Path)
		}
		byPath[m.Path] = append(byPath[m.Path], m)
	}
	exePlaced := false
	for _, raw := range paths {
		ms := byPath[raw]
		name, deleted := strings.CutSuffix(raw, deletedSuffix)
		if !filepath.IsAbs(name) {
			continue
		}
		isExe := name == c.exe
		host := filepath.Join(opts.Root, filepath.Clean(name))
		if isExe && opts.Exe != "" {
			host = opts.Exe
		}
		f, note := c.open(cf, ms, name, host, deleted, isExe, opts)
		if note != "" {
			c.notes = append(c.notes, note)
		}
		if f == nil {
			continue
		}
		c.files[raw] = host
		added := false
		for _, m := range ms {
			if _, ok := c.space.Add(f, module.Mapping{Start: m.Start, End: m.End, Offset: m.Offset, Perms: m.Perms, Path: name, Deleted: deleted}); ok {
				added = true
			}
		}
		if added {
			c.notes = append(c.notes, f.Notes...)
			exePlaced = exePlaced || isExe
		}
	}
	if opts.Exe != "" && !exePlaced {
		c.placeExe(cf, opts.Exe)
	}
	if c.exe == "" {
		c.exe = opts.Exe
	}
	c.addVDSO(cf)
	return c
}

// open opens the file behind one NT_FILE path and checks it; a nil File
// with a note says why it is not used, a nil File without one that it is
// not an ELF object (data files, fonts, locale archives are mapped too).
func (c *coreModules) open(cf *core.File, ms []core.Mapping, name, host string, deleted, isExe bool, opts CoreOptions) (*module.File, string) {
	base := filepath.Base(name)
	want, isELF, headerRead := coreBuildID(cf, ms)
	if headerRead && !isELF {
		return nil, "" // the core holds its first page: not ELF
	}
	fix := "copy it from the machine the core came from"
	if isExe {
		fix += " or pass --exe"
	}
	fi, err := os.Stat(host)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !isELF && !isExe && !mapsCode(ms) {
			return nil, "" // a data file, most likely: its absence costs nothing
		}
		where := host + " not found"
		if deleted && host == filepath.Join(opts.Root, name) {
			where = fmt.Sprintf("%s was deleted while the process ran (the core names it %q) and is not there now", host, name+deletedSuffix)
		}
		return nil, fmt.Sprintf("%s: missing: %s; %s; its frames are unnamed and its unwind tables unknown", base, where, fix)
	case err != nil:
		return nil, fmt.Sprintf("%s: %v", base, unwrapPathError(err))
	case !fi.Mode().IsRegular():
		return nil, "" // a device or a FIFO: never opened
	}
	mopts := module.Options{OriginalPath: name, Root: opts.Root, Debuginfod: opts.fetch}
	if host == opts.Exe {
		mopts.OriginalPath = host // its debug link is beside it
	}
	f, err := modules.Open(host, mopts)
	if err != nil {
		if errors.Is(err, module.ErrNotELF) {
			return nil, ""
		}
		return nil, err.Error()
	}
	switch {
	case want != "" && f.BuildID != want:
		have := "has no build id"
		if f.BuildID != "" {
			have = "is build " + f.BuildID
		}
		return nil, fmt.Sprintf("%s: build id mismatch: the process mapped build %s, but %s %s; %s; its frames are unnamed", base, want, host, have, fix)
	case want == "" && deleted && host == filepath.Join(opts.Root, name):
		return f, fmt.Sprintf("%s: was deleted while the process ran and the core does not hold its build id: %s may be another build", base, host)
	}
	return f, ""
}

// mapsCode says whether a file is mapped executable, or with permissions
// the core does not give (gcore leaves out code it did not dump).
func mapsCode(ms []core.Mapping) bool {
	for _, m := range ms {
		if m.Perms == "" || strings.Contains(m.Perms, "x") {
			return true
		}
	}
	return false
}

// coreExePath is the path of the mapping that holds the executable's
// entry point (or program headers), as the core names it.
func coreExePath(cf *core.File) string {
	for _, tag := range []uint64{core.AtEntry, core.AtPhdr} {
		at, ok := cf.AuxVal(tag)
		if !ok || at == 0 {
			continue
		}
		for _, m := range cf.Mappings {
			if at >= m.Start && at < m.End {
				return strings.TrimSuffix(m.Path, deletedSuffix)
			}
		}
	}
	return ""
}

// coreBuildID reads the build id of a mapped ELF file from the core's
// memory at its first mapping (file offset 0), where the kernel (with
// the default coredump_filter) and gcore dump the first page: the ELF
// header, the program headers and, in practice, the build-id note.
// isELF and headerRead say what the core told: headerRead false when it
// does not hold the first bytes at all.
func coreBuildID(cf *core.File, ms []core.Mapping) (id string, isELF, headerRead bool) {
	i := slices.IndexFunc(ms, func(m core.Mapping) bool { return m.Offset == 0 })
	if i < 0 {
		return "", false, false
	}
	start, size := ms[i].Start, ms[i].End-ms[i].Start
	var eh [64]byte
	if n, _ := cf.ReadAt(eh[:], start); n < len(eh) {
		return "", false, false
	}
	if string(eh[:4]) != elf.ELFMAG {
		return "", false, true
	}
	le := binary.LittleEndian
	if eh[elf.EI_CLASS] != byte(elf.ELFCLASS64) || eh[elf.EI_DATA] != byte(elf.ELFDATA2LSB) {
		return "", true, true
	}
	phoff, phentsize, phnum := le.Uint64(eh[32:]), uint64(le.Uint16(eh[54:])), uint64(le.Uint16(eh[56:]))
	if phentsize < 56 || phnum == 0 || phnum > 64 || phoff >= size || phnum*phentsize > size-phoff {
		return "", true, true
	}
	ph := make([]byte, phnum*phentsize)
	if n, _ := cf.ReadAt(ph, start+phoff); n < len(ph) {
		return "", true, true
	}
	for j := uint64(0); j < phnum; j++ {
		p := ph[j*phentsize:]
		if elf.ProgType(le.Uint32(p)) != elf.PT_NOTE {
			continue
		}
		off, sz := le.Uint64(p[8:]), le.Uint64(p[32:])
		if off >= size || sz > size-off || sz > 64<<10 {
			continue
		}
		notes := make([]byte, sz)
		if n, _ := cf.ReadAt(notes, start+off); n < len(notes) {
			continue
		}
		if id := gnuBuildID(notes); id != "" {
			return id, true, true
		}
	}
	return "", true, true
}

// gnuBuildID finds NT_GNU_BUILD_ID among ELF notes (namesz, descsz,
// type, then name and desc, each padded to 4 bytes) and returns it in
// hex, as module.File.BuildID spells it.
func gnuBuildID(data []byte) string {
	le := binary.LittleEndian
	for len(data) >= 12 {
		namesz, descsz, typ := uint64(le.Uint32(data)), uint64(le.Uint32(data[4:])), le.Uint32(data[8:])
		data = data[12:]
		nameEnd := (namesz + 3) &^ 3
		descEnd := nameEnd + (descsz+3)&^3
		if namesz > uint64(len(data)) || descEnd > uint64(len(data)) {
			return ""
		}
		if typ == ntGNUBuildID && namesz == 4 && string(data[:4]) == "GNU\x00" && descsz > 0 {
			return hex.EncodeToString(data[nameEnd : nameEnd+descsz])
		}
		data = data[descEnd:]
	}
	return ""
}

// placeExe places the executable given with --exe when no NT_FILE
// mapping names it (a core without that note): its entry point in the
// auxiliary vector gives its load bias.
func (c *coreModules) placeExe(cf *core.File, exe string) {
	base := filepath.Base(exe)
	entry, ok := cf.AuxVal(core.AtEntry)
	if !ok {
		c.notes = append(c.notes, fmt.Sprintf("%s: not placed: the core names no mapping of it and has no entry point (AT_ENTRY) to place it by", base))
		return
	}
	ef, err := elf.Open(exe)
	if err != nil {
		c.notes = append(c.notes, fmt.Sprintf("%s: %v", base, err))
		return
	}
	defer ef.Close()
	f, err := modules.Open(exe, module.Options{})
	if err != nil {
		c.notes = append(c.notes, err.Error())
		return
	}
	var bias uint64
	if ef.Type == elf.ET_DYN {
		bias = entry - ef.Entry
	}
	const page = 0xfff
	for _, p := range ef.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		perms := []byte("---p")
		for i, fl := range []elf.ProgFlag{elf.PF_R, elf.PF_W, elf.PF_X} {
			if p.Flags&fl != 0 {
				perms[i] = "rwx"[i]
			}
		}
		start := (bias + p.Vaddr) &^ page
		end := (bias + p.Vaddr + p.Memsz + page) &^ page
		c.space.Add(f, module.Mapping{Start: start, End: end, Offset: p.Off &^ page, Perms: string(perms), Path: exe})
		if p.Filesz > 0 {
			// The core leaves the file's pages out (qemu-user's cores
			// have no NT_FILE): the code is read from the file, as gdb
			// does, for the unwinder's look at instructions.
			cf.Mappings = append(cf.Mappings, core.Mapping{Start: start, End: (bias + p.Vaddr + p.Filesz + page) &^ page, Offset: p.Off &^ page, Perms: string(perms), Path: exe})
		}
	}
	c.files[exe] = exe
	c.notes = append(c.notes, f.Notes...)
	c.exe = exe
}

// addVDSO places the vDSO, copied out of the core's memory at
// AT_SYSINFO_EHDR: it is no file.
func (c *coreModules) addVDSO(cf *core.File) {
	at, ok := cf.AuxVal(core.AtSysinfoEhdr)
	if !ok || at == 0 {
		return
	}
	for _, s := range cf.Segments {
		if at < s.Addr || at-s.Addr >= s.Size {
			continue
		}
		size := s.Addr + s.Size - at
		if size > 1<<20 {
			break
		}
		img := make([]byte, size)
		if n, _ := cf.ReadAt(img, at); n < len(img) {
			break
		}
		f, err := module.OpenBytes("[vdso]", img)
		if err != nil {
			c.notes = append(c.notes, err.Error())
			return
		}
		c.space.Add(f, module.Mapping{Start: at, End: at + size, Perms: "r-xp", Path: "[vdso]"})
		return
	}
	c.notes = append(c.notes, "[vdso]: not in the core; frames in it are unnamed")
}

// ntGNUBuildID is NT_GNU_BUILD_ID, the note type of a build id.
const ntGNUBuildID = 3
