package heuristics

import "path/filepath"

// source is what kind of evidence a snapshot is: a live process read by
// hangdoc attach, a core file, or a dump a tool printed (gdb, py-spy, …),
// pasted. It is the one reading of stacks.Snapshot.Source in heuristics;
// what the source could give is Snapshot.Evidence.
type source struct{ name string }

// live says the snapshot was read from the live process by hangdoc
// itself (attach, or its JSON read back).
func (s source) live() bool { return s.name == "attach" }

// printedBy says the snapshot is a dump of the tool named ("gdb").
func (s source) printedBy(tool string) bool { return s.name == tool }

// text names where the snapshot came from, for "no mutex owner in …".
func (s source) text() string {
	switch s.name {
	case "":
		return "this snapshot"
	case "attach":
		return "this attach (they could not be read)"
	case "core":
		return "this core file"
	case "merged":
		return "these inputs"
	case "gdb", "lldb", "eu-stack", "pstack", "py-spy":
		return "a " + s.name + " dump"
	}
	return "a " + filepath.Base(s.name) + " dump"
}
