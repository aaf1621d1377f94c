package stacks

import "fmt"

// The call trees of macOS sample(1) and spindump reports: each thread's
// samples are a tree of frames with counts, built line by line from the
// indentation (macThread.add), and a thread's stack is the tree's
// heaviest path (heaviestPath). The two formats' lines are read in
// macos.go.

// macNode is one node of a thread's call tree.
type macNode struct {
	f        Frame
	key      string
	count    int
	kernel   bool
	truncTop bool   // spindump's "<truncated backtrace>"
	cut      bool   // the line ends before the frame does
	note     string // "(blocked by turnstile …)", "(running)"
	children []*macNode
	index    map[string]*macNode
}

func (n *macNode) child(c *macNode) *macNode {
	if n.index != nil {
		if have := n.index[c.key]; have != nil {
			have.count += c.count
			if have.note == "" {
				have.note = c.note
			}
			return have
		}
	} else {
		for _, have := range n.children {
			if have.key == c.key {
				have.count += c.count
				if have.note == "" {
					have.note = c.note
				}
				return have
			}
		}
	}
	n.children = append(n.children, c)
	if n.index == nil && len(n.children) > 8 {
		n.index = make(map[string]*macNode, 16)
		for _, have := range n.children {
			n.index[have.key] = have
		}
	} else if n.index != nil {
		n.index[c.key] = c
	}
	return c
}

type macLevel struct {
	col int
	n   *macNode
}

// add puts a node read at column col into the tree.
func (th *macThread) add(col int, n *macNode, sample bool, l textLine) {
	if l.cut || n.cut {
		th.t.Notes = appendNote(th.t.Notes, fmt.Sprintf("line %d: frame cut mid-way; its name may be partial", l.no))
	}
	if th.heaviest {
		parent := &th.root
		if th.last != nil {
			parent = th.last
		}
		th.last = parent.child(n)
		return
	}
	for len(th.open) > 0 && th.open[len(th.open)-1].col >= col {
		th.open = th.open[:len(th.open)-1]
	}
	parent := &th.root
	switch {
	case len(th.open) > 0:
		parent = th.open[len(th.open)-1].n
	case sample && col <= th.col && th.last != nil:
		// the paste lost its indentation: a chain, outermost first
		parent = th.last
		if !th.flattened {
			th.flattened = true
			th.t.Notes = appendNote(th.t.Notes, fmt.Sprintf("line %d: call tree without its indentation; frames read as one chain", l.no))
		}
	}
	c := parent.child(n)
	th.open = append(th.open, macLevel{col: col, n: c})
	th.last = c
}

// heaviestPath walks the tree from the root: at each level it takes the
// children of the nodes reached so far, groups the ones of one function
// (a loop sampled at several addresses is one function held in all its
// samples), and goes into the group with the most samples, unless more
// samples ended at the current level than went into that group. Each
// node returned stands for its group: the group's total count, the PC of
// its heaviest member.
func heaviestPath(root *macNode) []*macNode {
	var path []*macNode
	level := []*macNode{root}
	here := 0 // samples at the current level, 0 at the root
	for {
		type group struct {
			n     macNode
			top   int // count of the heaviest member
			nodes []*macNode
		}
		var groups []*group
		byFunc := map[string]*group{}
		sum := 0
		for _, n := range level {
			for _, c := range n.children {
				sum += c.count
				k := c.key
				if c.f.Func != "" {
					k = c.f.Func + "\x00" + c.f.Module
					if c.kernel {
						k += "\x00k"
					}
				}
				g := byFunc[k]
				if g == nil {
					g = &group{n: *c}
					g.n.count, g.n.children, g.n.index = 0, nil, nil
					byFunc[k] = g
					groups = append(groups, g)
				}
				g.n.count += c.count
				if c.count > g.top {
					g.top = c.count
					g.n.f.PC, g.n.f.Offset, g.n.f.File, g.n.f.Line = c.f.PC, c.f.Offset, c.f.File, c.f.Line
				}
				if g.n.note == "" {
					g.n.note = c.note
				}
				g.nodes = append(g.nodes, c)
			}
		}
		if len(groups) == 0 {
			return path
		}
		best := groups[0]
		for _, g := range groups[1:] {
			if g.n.count > best.n.count {
				best = g
			}
		}
		if len(path) > 0 && here-sum > best.n.count {
			return path // more samples ended here than went deeper
		}
		n := best.n
		path = append(path, &n)
		level, here = best.nodes, n.count
	}
}
