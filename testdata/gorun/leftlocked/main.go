// Patient: a sync.Mutex left locked. update() returns early on a bad
// key without unlocking; every later get() waits for the lock for ever.
// It also serves HTTP, as most Go servers do (an idle accept loop in the
// network poller, which keeps Go's own all-asleep check away): the lock
// waiters must come first, not "waiting on I/O". A goroutine on the
// network could hold a lock across its call, so the waits must be long:
// a minute in the dump (gen.sh waits 70 s), every sample of a live read.
package main

import (
	"errors"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	// the tail every patient shares: "stuck" once hung, then the
	// dump HANGDOC_DUMP asks for
	"github.com/hangdoc/hangdoc/testdata/gorun/selfdump"
)

type store struct {
	mu   sync.Mutex
	data map[string]int
}

func (s *store) update(k string) error {
	s.mu.Lock()
	if k == "" {
		return errors.New("empty key") // the bug: no s.mu.Unlock() on this path
	}
	s.data[k]++
	s.mu.Unlock()
	return nil
}

func (s *store) get(k string) int {
	s.mu.Lock() // waits for ever
	defer s.mu.Unlock()
	return s.data[k]
}

func main() {
	s := &store{data: map[string]int{}}
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		go http.Serve(l, nil)
	}
	_ = s.update("")
	for i := 0; i < 3; i++ {
		go func() {
			for {
				s.get("a")
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	go func() { // the GC stamps a waiting goroutine's wait start: the dump's "N minutes"
		for {
			time.Sleep(5 * time.Second) // seldom: a live read that catches it running cannot rule it out as a holder
			runtime.GC()
		}
	}()
	selfdump.Stuck(300 * time.Millisecond)
	select {}
}
