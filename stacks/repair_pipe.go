package stacks

// The repairer runs on a goroutine of its own, a few batches of lines
// ahead of the splitter and the parsers, so that a large dump is read
// and repaired on one core while it is parsed on the other: on the
// 100 MB gdb dump of `make bench` the repair is 45% of the parse. The
// batches in flight bound what it holds (pipeBatches × pipeBatch
// lines); a batch the parse's side has read goes back to be filled
// again (free), so a dump of any size makes a handful of them, not one
// every 512 lines (the 32 MB goroutine dump: 14.7 MB of batches).
// Everything the repairer keeps (its notes, why it stopped, a read
// error) is read by the parse's side only after finish has joined the
// goroutine.

const (
	pipeBatch   = 512 // lines a batch
	pipeBatches = 4   // batches in flight
)

type repPipe struct {
	ch chan []repLine
	// free holds batches read to their end, to be filled again. A batch
	// is made only when none is free, the producer holding none: then at
	// most pipeBatches are in ch and one is being read, so there are
	// never more than pipeBatches+2, and free, as large, is never full
	// when one comes back (one that found it full was dropped and made
	// again, under load: 8-14 made instead of 6)
	free   chan []repLine
	quit   chan struct{} // closed: stop reading
	cur    []repLine     // what is left of the batch being taken from
	held   []repLine     // that batch whole, for free
	made   int           // batches made (the producer's; read once it has ended)
	closed bool          // no line will come
	joined bool          // the goroutine has ended
}

// next returns the next repaired line; false at the end of the input
// (or once halt or finish stopped the reading).
func (rp *repairer) next() (repLine, bool) {
	p := rp.pipe
	if p == nil {
		p = &repPipe{ch: make(chan []repLine, pipeBatches), free: make(chan []repLine, pipeBatches+2), quit: make(chan struct{})}
		rp.pipe = p
		go rp.produce(p)
	}
	for len(p.cur) == 0 {
		if p.closed {
			return repLine{}, false
		}
		if p.held != nil {
			// read to its end: a line is taken by value, so nothing
			// points into the batch any more
			select {
			case p.free <- p.held[:0]:
			default:
			}
			p.held = nil
		}
		b, ok := <-p.ch
		if !ok {
			p.closed, p.joined = true, true
			return repLine{}, false
		}
		p.cur, p.held = b, b
	}
	l := p.cur[0]
	p.cur = p.cur[1:]
	return l, true
}

// produce repairs the input batch by batch until it ends or quit is
// closed; it closes ch when it returns.
func (rp *repairer) produce(p *repPipe) {
	defer close(p.ch)
	batch := p.batch()
	for {
		l, ok := rp.repair()
		if ok {
			batch = append(batch, l)
		}
		if len(batch) == pipeBatch || !ok && len(batch) > 0 {
			select {
			case p.ch <- batch:
			case <-p.quit:
				return
			}
			batch = p.batch()
		}
		if !ok {
			return
		}
	}
}

// batch is an empty batch to fill: one the parse's side has read, or a
// new one.
func (p *repPipe) batch() []repLine {
	select {
	case b := <-p.free:
		return b
	default:
		p.made++
		return make([]repLine, 0, pipeBatch)
	}
}

// finish stops the reading, if it goes on, and waits for the repairer's
// goroutine to end: its fields may be read after it.
func (rp *repairer) finish() {
	p := rp.pipe
	if p == nil {
		rp.done = true
		rp.pipe = &repPipe{closed: true, joined: true}
		return
	}
	if !p.joined {
		close(p.quit)
		for range p.ch {
		}
		p.joined = true
	}
	p.cur, p.held, p.closed = nil, nil, true
}

// halt stops the reading at the parse's request (a parser found the
// input is no dump): what was read is kept, and why is said.
func (rp *repairer) halt(why error) {
	rp.finish()
	rp.stop = why
	rp.buf = rp.buf[:0]
}
