// A test that hangs: `go test -timeout 2s` in a module holding this file
// panics with "test timed out after 2s" and dumps every goroutine. The
// test waits for a result a worker never sends: the worker is blocked on
// a mutex the test holds.
package hang

import (
	"sync"
	"testing"
)

type store struct {
	mu   sync.Mutex
	data map[int]int
}

func (s *store) put(k, v int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[k] = v
}

func TestStore(t *testing.T) {
	s := &store{data: map[int]int{}}
	done := make(chan struct{})
	s.mu.Lock()
	go func() {
		s.put(1, 2)
		close(done)
	}()
	<-done // the worker needs s.mu, which this test holds
	s.mu.Unlock()
}
