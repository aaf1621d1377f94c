package stacks

import (
	"fmt"
	"strings"
	"testing"
)

// A long input goes through a handful of batches, each filled again once
// the parse's side has read it, and every line comes out once, in order.
func TestRepairPipeReusesBatches(t *testing.T) {
	const lines = 200 * pipeBatch
	var in strings.Builder
	for i := range lines {
		fmt.Fprintf(&in, "#%d  0x%x in f%d () from /lib/libc.so.6\n", i%50, i, i)
	}
	rp := newRepairer(strings.NewReader(in.String()))
	n := 0
	for {
		l, ok := rp.next()
		if !ok {
			break
		}
		if want := fmt.Sprintf("#%d  0x%x in f%d () from /lib/libc.so.6", n%50, n, n); l.text != want || l.no != n+1 {
			t.Fatalf("line %d: got %d %q, want %q", n+1, l.no, l.text, want)
		}
		n++
	}
	rp.finish()
	if n != lines {
		t.Fatalf("read %d lines, want %d", n, lines)
	}
	// at most those in flight on the channel, one being filled and one
	// being read (repPipe.free)
	if max := pipeBatches + 2; rp.pipe.made > max {
		t.Errorf("%d batches made for %d, want at most %d", rp.pipe.made, lines/pipeBatch, max)
	}
}
