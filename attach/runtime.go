package attach

import (
	"time"

	"github.com/hangdoc/hangdoc/stacks"
)

// A language runtime keeps threads of its own that native stacks do not
// show: Go's goroutines, CPython's frames, a JVM's Java threads. Each
// runtime hangdoc reads is one langRuntime in runtimes; the sampler,
// Attach and Core know none of them by name. docs/DESIGN.md says what a
// new runtime adds.
type langRuntime interface {
	// live opens the reader of a live target that runs this runtime,
	// before anything is stopped (modules and symbols are loaded); nil
	// when the process does not run it. A runtime it cannot read is a
	// note on tg.proc (and Process.Runtime may still name it).
	live(tg *target, opts Options) runtimeReader
	// coreThreads reads a core's process in place of its native
	// threads, before they are unwound: true when it set c.proc's
	// threads; a note says why a process that runs the runtime could not
	// be read so (its native threads are then unwound).
	coreThreads(c *coreProcess) (read bool, note string)
	// coreMerge adds what the runtime knows to the native threads
	// unwound from a core, and the evidence it read to ev.
	coreMerge(c *coreProcess, ev *stacks.Evidence)
}

// runtimes are asked in order; the first whose live reader opens is the
// target's.
var runtimes = []langRuntime{goRuntime{}, pythonRuntime{}, jvmRuntime{}}

// runtimeReader reads one live process's runtime across the samples.
type runtimeReader interface {
	// sample takes one sample of tg in place of the native sampler;
	// false lets the native sampler take it (and merge follows).
	sample(s *sampler, tg *target, first bool) bool
	// merge adds what the runtime knows to the native sample just taken.
	merge(tg *target)
	// finish runs once sampling is over, before the threads' CPU is
	// computed: what is read once, figures over the window, and the
	// evidence the runtime read, into ev.
	finish(tg *target, wall time.Duration, ev *stacks.Evidence)
	// ownStacks says that the runtime reads stacks itself, so the native
	// symbol tables need not be warmed before the first sample.
	ownStacks() bool
}

// openRuntime finds the runtime tg runs and opens its reader.
func (tg *target) openRuntime(opts Options) {
	for _, rt := range runtimes {
		if r := rt.live(tg, opts); r != nil {
			tg.runtime = r
			return
		}
	}
}

// nativeRuntime is the part of a runtime reader that leaves sampling
// to the native sampler: embedded by readers that only merge or finish.
type nativeRuntime struct{}

func (nativeRuntime) sample(*sampler, *target, bool) bool             { return false }
func (nativeRuntime) merge(*target)                                   {}
func (nativeRuntime) finish(*target, time.Duration, *stacks.Evidence) {}
func (nativeRuntime) ownStacks() bool                                 { return false }

// noCore is the part of a runtime that is not read from core files.
type noCore struct{}

func (noCore) coreThreads(*coreProcess) (bool, string)  { return false, "" }
func (noCore) coreMerge(*coreProcess, *stacks.Evidence) {}
