package heuristics

// Hint is a next step a diagnosis suggests, as data: heuristics say what
// would show more (attach to this process, with its children), the
// report says it in words (the command to type), and JSON keeps it for a
// tool that takes the step itself.
type Hint struct {
	// Action is the step: HintAttach or HintGoroutineDump.
	Action string `json:"action"`
	// Pid is the process to take it on; absent when the dump gave none.
	Pid int `json:"pid,omitempty"`
	// Tree: with the process's descendants (attach --tree).
	Tree bool `json:"tree,omitempty"`
	// Samples: this many samples (attach --samples N).
	Samples int `json:"samples,omitempty"`
	// Why is what the step would show, the words that end the sentence:
	// "to follow the wait", "on the live process for certainty".
	Why string `json:"why"`
}

// Hint actions.
const (
	// HintAttach: hangdoc attach on the live process.
	HintAttach = "attach"
	// HintGoroutineDump: the Go program's own goroutine dump (SIGQUIT),
	// read with hangdoc analyze.
	HintGoroutineDump = "goroutine-dump"
)

// attachHint is the hint to attach to pid (0: the dump named none).
func attachHint(pid int, why string) Hint {
	return Hint{Action: HintAttach, Pid: max(pid, 0), Why: why}
}

// firstPid is a diagnosis's first process, 0 when it names none.
func firstPid(d *Diagnosis) int {
	if len(d.Pids) > 0 {
		return max(d.Pids[0], 0)
	}
	return 0
}
