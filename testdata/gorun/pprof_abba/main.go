// A Go program in a lock-order deadlock with idle workers on a channel;
// it prints its goroutine profile at debug=1, as /debug/pprof/goroutine?debug=1
// serves it.
package main

import (
	"os"
	"runtime/pprof"
	"sync"
	"time"
)

var a, b sync.Mutex

func ab() { a.Lock(); time.Sleep(100 * time.Millisecond); b.Lock() }
func ba() { b.Lock(); time.Sleep(100 * time.Millisecond); a.Lock() }

func worker(jobs chan int) {
	for range jobs {
	}
}

func main() {
	jobs := make(chan int)
	for i := 0; i < 8; i++ {
		go worker(jobs)
	}
	go ab()
	go ba()
	time.Sleep(500 * time.Millisecond)
	pprof.Lookup("goroutine").WriteTo(os.Stdout, 1)
}
