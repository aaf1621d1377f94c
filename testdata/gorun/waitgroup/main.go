// Patient: a sync.WaitGroup.Wait that nothing will satisfy: Add(3) for
// two workers. The workers finish; main waits forever. A ticker keeps the
// runtime's deadlock detector quiet.
package main

import (
	"runtime"
	"sync"
	"time"

	// the tail every patient shares: "stuck" once hung, then the
	// dump HANGDOC_DUMP asks for
	"github.com/hangdoc/hangdoc/testdata/gorun/selfdump"
)

func work(id int, wg *sync.WaitGroup, results chan<- int) {
	defer wg.Done()
	results <- id * id
}

func keepAlive() {
	for range time.Tick(500 * time.Millisecond) {
		runtime.GC()
	}
}

func main() {
	var wg sync.WaitGroup
	results := make(chan int, 3)
	wg.Add(3) // one more than the workers started
	for i := 0; i < 2; i++ {
		go work(i, &wg, results)
	}
	go keepAlive()
	go func() {
		// Said from another goroutine: main is the one that hangs
		// (in wg.Wait below, where the dump must show it), so it
		// cannot be the one to say so.
		selfdump.Stuck(200 * time.Millisecond)
	}()
	wg.Wait()
	close(results)
}
