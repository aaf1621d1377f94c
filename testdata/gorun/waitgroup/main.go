// Patient: a sync.WaitGroup.Wait that nothing will satisfy: Add(3) for
// two workers. The workers finish; main waits forever. A ticker keeps the
// runtime's deadlock detector quiet.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"time"
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
		selfDump()
	}()
	wg.Wait()
	close(results)
}

func selfDump() {
	switch os.Getenv("HANGDOC_DUMP") {
	case "pprof":
		pprof.Lookup("goroutine").WriteTo(os.Stdout, 2)
	case "stack":
		buf := make([]byte, 1<<20)
		os.Stdout.Write(buf[:runtime.Stack(buf, true)])
	case "debug":
		os.Stdout.Write(debug.Stack())
	default:
		return
	}
	os.Exit(0)
}
