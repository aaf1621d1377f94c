package stacks

// threadSlab hands out zero Threads cut from blocks of a few hundred. A
// dump of 100,000 threads is that many Threads: allocated one by one
// they cost the collector as many objects, and they lie scattered
// among the parser's other allocations, so that each of the
// heuristics' passes over a process's threads missed the cache at
// every one. From a slab, a process's threads lie in the order they
// are read, and a pass over them streams.
type threadSlab []Thread

const threadSlabLen = 256

func (s *threadSlab) next() *Thread {
	if len(*s) == 0 {
		*s = make([]Thread, threadSlabLen)
	}
	th := &(*s)[0]
	*s = (*s)[1:]
	return th
}
