package report

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// processHead is what the text and markdown reports say at the head of a
// process, each in its own markup: its command line (raw, from the
// target) and the line under it, "12 threads in 3 groups · 3 samples
// 500ms apart", with the groups it counts.
type processHead struct {
	cmd     string
	groups  []stacks.Group
	summary string
}

func headOf(snap *stacks.Snapshot, proc *stacks.Process) processHead {
	h := processHead{cmd: strings.Join(proc.Cmdline, " "), groups: stacks.GroupThreads(proc.Threads)}
	if h.cmd == "" {
		h.cmd = proc.Exe
	}
	sampling := "1 sample"
	if snap.Samples > 1 {
		sampling = fmt.Sprintf("%d samples %v apart", snap.Samples, snap.Interval)
	}
	h.summary = fmt.Sprintf("%s in %s · %s%s", plural(len(proc.Threads), unit(proc.Threads)), plural(len(h.groups), "group"), sampling, parentText(proc))
	return h
}
