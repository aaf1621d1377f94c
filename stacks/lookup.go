package stacks

// ThreadByTid is the process's thread tid, or nil: a dump lists each
// thread once (a tid shown twice is merged by the parsers).
func (p *Process) ThreadByTid(tid int) *Thread {
	for _, th := range p.Threads {
		if th.Tid == tid {
			return th
		}
	}
	return nil
}

// ThreadNamed is the process's first thread named name, or nil.
func (p *Process) ThreadNamed(name string) *Thread {
	for _, th := range p.Threads {
		if th.Name == name {
			return th
		}
	}
	return nil
}
