package stacks

import "fmt"

// Merge combines several snapshots into one: several dumps given at once
// (one per rank or host), or several attaches of one job. Processes come
// in the order of the inputs; each keeps its Label (the caller sets it to
// the input's name before merging).
//
// The merged snapshot claims only the evidence every input has (a fact
// one input lacks is not known for its processes), the fewest samples of
// any input, the earliest time one was taken, and the inputs' interval
// when they agree (0 when they do not). Its Source is the inputs' common
// source, "merged" when they differ. Nil inputs are skipped; with no
// input, Merge returns an empty snapshot.
//
// Pids and tids are kept as read. Inputs from different machines (or pid
// namespaces) may reuse them: a process whose pid an earlier input has
// already gets a note saying so, since heuristics compare ids across the
// processes of one snapshot.
func Merge(snaps ...*Snapshot) *Snapshot {
	return merge(snaps, func(pid, input int) string {
		return fmt.Sprintf("pid %d also appears in input %d: the inputs come from different machines or pid namespaces, and their ids name different processes", pid, input)
	})
}

// mergePieces combines the snapshots of the pieces of one input (split.go).
func mergePieces(snaps []*Snapshot) *Snapshot {
	return merge(snaps, func(pid, piece int) string {
		return fmt.Sprintf("pid %d was also the pid of dump %d of this input: read as another process (a later session or dump), not merged into it", pid, piece)
	})
}

func merge(snaps []*Snapshot, dupNote func(pid, input int) string) *Snapshot {
	out := &Snapshot{Schema: Schema, Processes: []*Process{}}
	first := true
	seenPid := map[int]int{} // pid → index of the input that had it first
	for i, s := range snaps {
		if s == nil {
			continue
		}
		if first {
			out.Source, out.Taken, out.Samples, out.Interval, out.Evidence = s.Source, s.Taken, s.Samples, s.Interval, s.Evidence
			first = false
		} else {
			if s.Source != out.Source {
				out.Source = "merged"
			}
			if !s.Taken.IsZero() && (out.Taken.IsZero() || s.Taken.Before(out.Taken)) {
				out.Taken = s.Taken
			}
			out.Samples = min(out.Samples, s.Samples)
			if s.Interval != out.Interval {
				out.Interval = 0
			}
			out.Evidence = Evidence{
				Owners:    out.Evidence.Owners && s.Evidence.Owners,
				CPU:       out.Evidence.CPU && s.Evidence.CPU,
				Syscalls:  out.Evidence.Syscalls && s.Evidence.Syscalls,
				Lineage:   out.Evidence.Lineage && s.Evidence.Lineage,
				Arguments: out.Evidence.Arguments && s.Evidence.Arguments,
				GIL:       out.Evidence.GIL && s.Evidence.GIL,
			}
		}
		for _, p := range s.Processes {
			if p == nil {
				continue
			}
			if j, dup := seenPid[p.Pid]; dup && j != i && p.Pid != 0 {
				p.Notes = append(p.Notes, dupNote(p.Pid, j+1))
			} else if !dup {
				seenPid[p.Pid] = i
			}
			out.Processes = append(out.Processes, p)
			if p.Evidence == nil {
				ev := s.Evidence
				p.Evidence = &ev
			}
		}
	}
	if first {
		out.Source = "merged"
	}
	// a process whose input knew more (or less) than every input did
	// keeps what its own input knew: a py-spy dump's GIL holders, a
	// jstack's monitor owners
	for _, p := range out.Processes {
		if *p.Evidence == out.Evidence {
			p.Evidence = nil
		}
	}
	return out
}
