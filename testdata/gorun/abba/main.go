// Patient: two goroutines take two sync.Mutex in opposite orders (ABBA):
// transfer(a, b) holds a.mu and waits for b.mu, transfer(b, a) holds b.mu
// and waits for a.mu. main waits for both in a WaitGroup; a keep-alive
// goroutine (a ticker) keeps the runtime's deadlock detector quiet and
// runs the GC, which records how long each goroutine has waited.
//
// It prints "stuck" when both transfers are blocked. With
// HANGDOC_DUMP=pprof|stack|debug it then writes that dump to stdout and
// exits; otherwise it waits for a signal (SIGQUIT prints the dump).
package main

import (
	"runtime"
	"sync"
	"time"

	// the tail every patient shares: "stuck" once hung, then the
	// dump HANGDOC_DUMP asks for
	"github.com/hangdoc/hangdoc/testdata/gorun/selfdump"
)

type account struct {
	mu      sync.Mutex
	name    string
	balance int
}

type bank struct {
	ready sync.WaitGroup
}

func (b *bank) transfer(from, to *account, n int) {
	from.mu.Lock()
	defer from.mu.Unlock()
	b.ready.Done()
	b.ready.Wait() // both hold their first lock
	to.mu.Lock()
	defer to.mu.Unlock()
	from.balance -= n
	to.balance += n
}

func keepAlive() {
	for range time.Tick(500 * time.Millisecond) {
		runtime.GC()
	}
}

func main() {
	a := &account{name: "alice", balance: 100}
	c := &account{name: "carol", balance: 100}
	b := &bank{}
	b.ready.Add(2)
	var done sync.WaitGroup
	done.Add(2)
	go func() { defer done.Done(); b.transfer(a, c, 10) }()
	go func() { defer done.Done(); b.transfer(c, a, 20) }()
	go keepAlive()
	b.ready.Wait()
	selfdump.Stuck(200 * time.Millisecond)
	done.Wait()
}
