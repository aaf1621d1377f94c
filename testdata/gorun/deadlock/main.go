// Patient: a deadlock the runtime detects itself. main locks a
// sync.Mutex it already holds (via a helper), while a worker waits on a
// channel main would have written: no goroutine can run, no timer is
// pending, and the runtime prints
// "fatal error: all goroutines are asleep - deadlock!" with every
// goroutine's stack, then exits with status 2.
package main

import "sync"

type registry struct {
	mu    sync.Mutex
	items map[string]int
}

func (r *registry) add(k string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items[k] = r.count() + 1
}

func (r *registry) count() int {
	r.mu.Lock() // already held by add
	defer r.mu.Unlock()
	return len(r.items)
}

func main() {
	r := &registry{items: map[string]int{}}
	jobs := make(chan string)
	go func() {
		for j := range jobs {
			_ = j
		}
	}()
	r.add("x")
	jobs <- "y"
}
