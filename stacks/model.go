// Package stacks holds hangdoc's one model, Snapshot: what every source
// (live attach, core file, pasted dump) produces and what heuristics and
// reports consume. It imports nothing of hangdoc.
package stacks

import "time"

// Schema names the JSON contract; bump it when a field is renamed or dropped.
const Schema = "hangdoc/v1"

// Snapshot is everything read from one or more processes at one time.
type Snapshot struct {
	Schema    string     `json:"schema"`
	Source    string     `json:"source"`         // "attach", "core", "gdb", …
	Taken     time.Time  `json:"taken,omitzero"` // zero (absent) when the source does not say
	Samples   int        `json:"samples"`
	Interval  Duration   `json:"interval,omitzero"`
	Evidence  Evidence   `json:"evidence"`
	Processes []*Process `json:"processes"`
}

// Evidence says what kinds of facts the source could give, so heuristics
// can weigh a missing fact right: no mutex owner in a gdb dump means
// "not known", in a live attach it means "no owner recorded".
type Evidence struct {
	Owners    bool `json:"owners"`    // mutex owners read from memory
	CPU       bool `json:"cpu"`       // CPU ticks per sample
	Syscalls  bool `json:"syscalls"`  // what each thread waits on in the kernel
	Lineage   bool `json:"lineage"`   // parents, children, fork without exec
	Arguments bool `json:"arguments"` // frame arguments (lock addresses) from a dump
	// GIL is set when who holds the Python GIL was read (a live CPython
	// process, py-spy): a thread without HoldsGIL then does not hold it.
	GIL bool `json:"gil,omitempty"`
}

// Process is one process and its threads.
type Process struct {
	Pid     int       `json:"pid"`
	PPid    int       `json:"ppid,omitempty"` // absent when unknown (a pasted dump)
	Exe     string    `json:"exe,omitempty"`
	Cmdline []string  `json:"cmdline,omitempty"`
	State   string    `json:"state,omitempty"` // state of the main thread, one letter; absent when unknown
	Threads []*Thread `json:"threads"`
	Modules []Module  `json:"modules,omitempty"`
	// Notes say what could not be read and why ("libfoo.so: no unwind
	// tables, frame pointers used"); a report shows them after the stacks.
	Notes []string `json:"notes,omitempty"`
	// Exited is set when the process went away during sampling; what was
	// read before stays in the snapshot.
	Exited bool `json:"exited,omitempty"`
	// Fork is set for a child that fork()ed from its parent and never
	// exec'd: it runs on a copy of the parent's memory, locks included.
	Fork *Fork `json:"fork,omitempty"`
	// Children are the pids of the process's children.
	Children []int `json:"children,omitempty"`
	// Label says where the process came from when a snapshot merges
	// several inputs (the dump's file name, a rank, a host).
	Label string `json:"label,omitempty"`
	// Heading is the line a person wrote above the process's dump to
	// name it ("* subprocess 91605 backtrace:"), when the paste has one.
	Heading string `json:"heading,omitempty"`
	// Message is what the process said about itself with its dump, when
	// the dump shows it: a Go "fatal error: all goroutines are asleep -
	// deadlock!", "panic: test timed out after 10m0s", "SIGQUIT: quit".
	Message string `json:"message,omitempty"`
	// Runtime names the language runtime read from the process, with its
	// version when known: "go1.26.8", "CPython 3.11.2".
	Runtime string `json:"runtime,omitempty"`
	// OSThreads are the OS threads of a process whose Threads are
	// goroutines, when they were asked for (hangdoc attach --threads).
	OSThreads []*Thread `json:"os_threads,omitempty"`
	// Stop is set when the process was stopped (state T or t) or traced
	// by another process when it was read: it cannot run until it is
	// continued or its tracer lets it go.
	Stop *Stop `json:"stop,omitempty"`
	// Evidence is what this process's own dump could give, when a paste
	// joins dumps of tools that give different facts (a py-spy dump,
	// which says who holds the GIL, after a gdb one); absent, the
	// snapshot's Evidence holds for it.
	Evidence *Evidence `json:"evidence,omitempty"`
}

// Stop says what holds a stopped or traced process, as far as /proc
// tells: it names the tracer, not the stop signal (the kernel keeps that
// to itself), so a job-control stop is told by its terminal.
type Stop struct {
	// TracerPid is the process tracing it (a debugger, strace), read
	// before hangdoc traced anything; 0 when none.
	TracerPid int    `json:"tracer_pid,omitempty"`
	Tracer    string `json:"tracer,omitempty"` // the tracer's command name
	// BackgroundTTY is set when the process has a controlling terminal
	// and is not in its foreground process group: a read of the terminal
	// stops it with SIGTTIN, a write (with tostop) with SIGTTOU.
	BackgroundTTY bool `json:"background_tty,omitempty"`
}

// Fork describes a forked child that did not exec.
type Fork struct {
	ParentPid int `json:"parent_pid"`
	// ParentThreads are the parent's thread ids when sampled: an owner
	// recorded in an inherited mutex that is one of these was a parent
	// thread at the fork.
	ParentThreads []int `json:"parent_threads"`
	// ParentModules are the parent's mapped objects (driver libraries the
	// parent initialised tell a fork-after-init hang).
	ParentModules []string `json:"parent_modules,omitempty"`
}

// Module is a mapped ELF object.
type Module struct {
	Path    string `json:"path"`
	Start   uint64 `json:"start"`
	End     uint64 `json:"end"`
	Bias    uint64 `json:"bias"`
	BuildID string `json:"build_id,omitempty"`
}

// Thread is one thread; Stack and State are those of its last sample,
// Samples() every sample, for heuristics that compare them.
type Thread struct {
	Tid   int     `json:"tid"`
	Name  string  `json:"name"`
	State string  `json:"state,omitempty"`
	CPU   float64 `json:"cpu,omitempty"` // percent of one core over the sampling window; absent when 0 or, without evidence.cpu, unknown
	Stack []Frame `json:"stack"`
	Wait  *Wait   `json:"wait,omitempty"`
	// Notes say why the stack may be incomplete (the thread could not be
	// stopped in time, the unwinder lost its way at a frame).
	Notes []string `json:"notes,omitempty"`
	// Number is the thread's number as the dump's tool printed it, the
	// one people name a thread by in a paste: gdb's "Thread 14 (Thread
	// 0x… (LWP 2268))" or "[Switching to thread 14 (…)]" ("2.1" with
	// several inferiors), lldb's "thread #3". Absent when the source
	// numbers no threads (a live attach names them by Tid).
	Number string `json:"number,omitempty"`
	// Runtime is what a language runtime says of the thread besides its
	// stack (a goroutine's status and creator, the Python thread that
	// holds the GIL, a Java thread's monitors); nil for a native thread.
	// The JSON keeps hangdoc/v1's names for it: "goroutine", "holds_gil"
	// (runtime_thread.go).
	Runtime *RuntimeThread `json:"-"`
	// ThreadRare holds what few sources give a thread (Samples, Handle,
	// Returned), nil for the others: 56 bytes less a thread, 2.6 MB of a
	// goroutine dump of 47,000. Read and set them through the methods,
	// which allow for nil; the JSON has them as members of the thread.
	*ThreadRare
}

// ThreadRare is what few threads have; see Thread.
type ThreadRare struct {
	// SampleList keeps every sample of a live attach (or of a paste of
	// several dumps) for heuristics that compare them.
	SampleList []Sample `json:"samples,omitempty"`
	// HandleID is the thread's id as a runtime printed it when the dump
	// gives no kernel tid: the pthread_t of a CPython faulthandler dump
	// or of py-spy on macOS (0x7f…). Tid is then 0.
	HandleID uint64 `json:"handle,omitempty"`
	// ReturnedCalls are the calls a call tree drawn by hand shows had
	// returned before the stack's innermost call (frames.go: RTKLIB#170's
	// first lock(&lock_trace)), in the tree's order, each with its
	// arguments: a lock one took is held while its caller is still on the
	// stack. Only calls whose caller is on the stack; absent for every
	// tool's dump.
	ReturnedCalls []ReturnedCall `json:"returned,omitempty"`
}

// Handle is the thread's id as its runtime printed it (ThreadRare), 0
// when the dump gave none.
func (t *Thread) Handle() uint64 {
	if t.ThreadRare == nil {
		return 0
	}
	return t.HandleID
}

// Returned are the calls a hand-drawn tree shows had returned
// (ThreadRare); nil for every tool's dump.
func (t *Thread) Returned() []ReturnedCall {
	if t.ThreadRare == nil {
		return nil
	}
	return t.ReturnedCalls
}

// Samples are the thread's samples, oldest first; nil for one dump.
func (t *Thread) Samples() []Sample {
	if t.ThreadRare == nil {
		return nil
	}
	return t.SampleList
}

// SetSamples sets Samples; a copy of the thread keeps its own.
func (t *Thread) SetSamples(s []Sample) { t.rare().SampleList = s }

// AddSample appends s to Samples; a copy of the thread keeps its own.
func (t *Thread) AddSample(s Sample) {
	r := t.rare()
	r.SampleList = append(r.SampleList, s)
}

// SetHandle sets Handle; a copy of the thread keeps its own.
func (t *Thread) SetHandle(h uint64) { t.rare().HandleID = h }

// SetReturned sets Returned; a copy of the thread keeps its own.
func (t *Thread) SetReturned(calls []ReturnedCall) { t.rare().ReturnedCalls = calls }

// rare is the thread's own ThreadRare to write into: copied, not shared
// with a copy of the thread made before.
func (t *Thread) rare() *ThreadRare {
	r := &ThreadRare{}
	if t.ThreadRare != nil {
		*r = *t.ThreadRare
	}
	t.ThreadRare = r
	return r
}

// ReturnedCall is a call that had returned: its frame, and Caller, the
// index in Thread.Stack of the frame that made it (still on the stack).
type ReturnedCall struct {
	Frame
	Caller int `json:"caller"`
}

// Sample is one observation of a thread.
type Sample struct {
	State    string  `json:"state"`
	CPUTicks uint64  `json:"cpu_ticks"` // user+system clock ticks since the previous sample
	Stack    []Frame `json:"stack"`
	Wait     *Wait   `json:"wait,omitempty"`
}

// Wait says what a blocked thread waits on, as far as it is known.
type Wait struct {
	Syscall string `json:"syscall"`        // "futex", "read", "wait4", …
	Nr      int64  `json:"nr"`             // syscall number; -1 when running
	Addr    uint64 `json:"addr,omitempty"` // futex word, for a futex wait
	Op      string `json:"op,omitempty"`   // futex operation, e.g. "FUTEX_WAIT_PRIVATE"
	Fd      int    `json:"fd,omitempty"`   // for reads, writes and polls on one fd
	Wchan   string `json:"wchan,omitempty"`
	// FdTarget says what the fd is: "pipe:[1234]", "socket:[5678]",
	// a path.
	FdTarget string `json:"fd_target,omitempty"`
	// Mutex is the pthread mutex whose futex the thread waits on, read
	// when the stack shows a mutex lock.
	Mutex *Mutex `json:"mutex,omitempty"`
	// JoinTid is the thread a pthread_join waits for.
	JoinTid int `json:"join_tid,omitempty"`
	// BlockedByTid and BlockedByPid name the thread and the process the
	// kernel says the wait is for, when a dump names them (a macOS
	// spindump's "blocked by turnstile waiting for python3 [1234]
	// thread 0x5678"). BlockedByTid is the thread's own tid for "waiting
	// for this thread". Syscall and Nr are then "" and -1 (not read).
	BlockedByTid int `json:"blocked_by_tid,omitempty"`
	BlockedByPid int `json:"blocked_by_pid,omitempty"`
	// Value is the futex word when it was read.
	Value *uint32 `json:"value,omitempty"`
	// PeerPids are the processes, other than the thread's own, that hold
	// the other end of the pipe or socket it waits on (of any of the fds
	// of a poll, select or epoll wait): the writers of a pipe it reads,
	// the readers of one it writes to, the holders of a connected unix or
	// TCP socket's peer. A live attach reads them from every process's
	// fds; they are the processes the thread waits on.
	PeerPids []int `json:"peer_pids,omitempty"`
	// PeerSelf: no other process holds the other end of the pipe the
	// thread waits on, and its own process does (a write end it kept
	// open after fork): only the process itself can write the data or
	// the EOF it waits for.
	PeerSelf bool `json:"peer_self,omitempty"`
	// Fds are the fds a poll, select or epoll wait watches, when there
	// are several and they could be read (at most 64); a wait on one fd
	// names it in Fd and FdTarget.
	Fds []int `json:"fds,omitempty"`
	// ChildPid is the child a wait4 or waitid waits for, when it names
	// one; 0 when it waits for any child.
	ChildPid int `json:"child_pid,omitempty"`
}

// Mutex is a glibc pthread_mutex_t as read from the target's memory.
type Mutex struct {
	Addr  uint64 `json:"addr"`
	Lock  uint32 `json:"lock"`  // __lock: 0 free, 1 locked, 2 locked with waiters (low bits of the owner TID for PI/robust)
	Owner int    `json:"owner"` // __owner: the TID that holds it, 0 when none is recorded (lock elision, a free lock)
	Kind  uint32 `json:"kind"`  // __kind: PTHREAD_MUTEX_{NORMAL 0, RECURSIVE 1, ERRORCHECK 2, ADAPTIVE 3}, +16 robust, +32 PI, +64 PP
	// Symbol names the mutex when a symbol covers its address
	// ("server_lock").
	Symbol string `json:"symbol,omitempty"`
}

// Frame is one stack frame, innermost first.
type Frame struct {
	Func   string `json:"func"`             // demangled, "" when unknown
	Module string `json:"module,omitempty"` // path of the mapped object
	Offset uint64 `json:"offset,omitempty"` // PC relative to the module's load bias
	PC     uint64 `json:"pc,omitempty"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	// Inlined marks a frame that has no machine frame of its own.
	Inlined bool `json:"inlined,omitempty"`
	// Signal marks the frame the kernel pushed for a signal handler
	// (gdb's "<signal handler called>").
	Signal bool `json:"signal,omitempty"`
	// Args are the arguments a dump printed ("mutex=0x5555… <server_lock>"):
	// the only lock addresses a pasted stack carries.
	Args []Arg `json:"args,omitempty"`
	// Samples is, for a stack read from a call tree (macOS sample,
	// spindump), how many of the thread's samples had this frame on the
	// stack: a leaf with as many samples as the thread held every one.
	Samples int `json:"samples,omitempty"`
}

// Arg is one argument of a frame: its text as a dump or a runtime printed
// it, and what that text names, read once by NewArg (the only way to make
// one). The read fields are not in the JSON: a document is read back
// through NewArg too.
type Arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Addr is the address a value printed as one names ("0x5555… <lock>",
	// Go's "0xc000…"); 0 when the value is not an address (or is null).
	Addr uint64 `json:"-"`
	// Symbol is the name printed for the value: the data symbol an
	// address points into ("server_lock", "work_cond+40",
	// "getHeap()::buf"), or an enumerator ("atfork_run_child").
	Symbol string `json:"-"`
	// Exact is set when Addr is the value the argument held; it
	// is false for Go's "0x…?" (a register argument the runtime did not
	// spill: maybe stale) and for values that are neither.
	Exact bool `json:"-"`
}

// Name is the frame's function for a person, "??" when no symbol covers
// the PC (gdb's spelling).
func (f Frame) Name() string {
	switch {
	case f.Signal:
		return "<signal handler called>"
	case f.Func != "":
		return f.Func
	default:
		return "??"
	}
}
