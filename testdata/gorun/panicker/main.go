// Patient: a healthy Go program for the kill-safety test. It runs several
// goroutines (some computing, some sleeping, some passing values over a
// channel), prints "ready", and on SIGUSR1 panics from a goroutine of its
// own: the runtime prints "panic: …" with the goroutine's stack on stderr
// and exits with status 2. A tracer that left a thread stopped, a
// breakpoint or a pending SIGTRAP behind would turn that into a hang or a
// different death.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

var work atomic.Uint64

func spin(n int) {
	for {
		x := uint64(n)
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		work.Add(x & 1)
		time.Sleep(time.Millisecond) // mostly asleep, often running
	}
}

func sleeper() {
	for {
		time.Sleep(5 * time.Millisecond)
	}
}

func pingpong(in <-chan int, out chan<- int) {
	for v := range in {
		time.Sleep(time.Millisecond)
		out <- v + 1
	}
}

func main() {
	runtime.GOMAXPROCS(4)
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	for i := 0; i < 4; i++ {
		go spin(i)
		go sleeper()
	}
	a, b := make(chan int), make(chan int)
	go pingpong(a, b)
	go pingpong(b, a)
	a <- 0
	fmt.Println("ready")
	<-usr1
	go func() {
		panic(fmt.Sprintf("SIGUSR1 asked for a panic after %d units of work", work.Load()))
	}()
	select {} // the panic ends the process
}
