package stacks

import "strings"

// A terminal UI's pane copied as it shows: lldb's `gui` draws its
// Threads window in a box (┌──<Threads>──┐, │ … │ padded to the pane's
// width, └──┘) around a tree of the process, its threads and their
// frames:
//
//	│ ◆─process 22068                                     │
//	│ ├─◆─thread #1: tid = 0x1d7a616, stop reason = signal│
//	│ │ ├─#0: __semwait_signal + 10                       │
//
// Inside a box (from its top line on; a copy may be cut before the
// bottom), the box's sides, the padding and the tree's glyphs come off,
// leaving "process 22068", "thread #1: …", "#0: __semwait_signal + 10"
// for the reader (lldb.go). Tree glyphs outside a box stay: a hand-drawn
// call tree's nesting is the frames reader's to read.

// tuiBox takes the box and tree off a line of a pane; the line as it is
// outside one.
func (rp *repairer) tuiBox(no int, s string) string {
	if len(s) < 3 || s[0] != 0xe2 && !rp.inBox {
		return s
	}
	switch {
	case strings.HasPrefix(s, "┌") && (strings.HasSuffix(s, "┐") || strings.Contains(s, "─")):
		rp.inBox = true
		rp.fixed(no, "a terminal UI's box and tree glyphs (lldb gui) taken off")
		return ""
	case !rp.inBox:
		return s
	case strings.HasPrefix(s, "└"):
		rp.inBox = false
		return ""
	case strings.HasPrefix(s, "│"):
		s = strings.TrimSuffix(strings.TrimRight(strings.TrimPrefix(s, "│"), " "), "│")
		return strings.TrimRight(strings.TrimLeft(s, " │├└◆─"), " ")
	}
	rp.inBox = false // a line outside the box: the copy ended
	return s
}
