// Patient: a sync.WaitGroup.Wait that nothing will satisfy: Add(3) for
// two workers. The workers finish; main waits forever. A ticker keeps the
// runtime's deadlock detector quiet.
package main

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	// the dump on HANGDOC_DUMP, one piece for every patient
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
		time.Sleep(200 * time.Millisecond)
		runtime.GC()
		fmt.Println("stuck")
		selfdump.OnRequest()
	}()
	wg.Wait()
	close(results)
}
