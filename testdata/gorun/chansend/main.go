// Patient: a channel send with no receiver. fetch() sends its result on
// an unbuffered channel; the caller gave up after a timeout and returned,
// so the sender waits forever. main goes on polling (its sleep keeps the
// runtime's deadlock detector quiet).
package main

import (
	"errors"
	"runtime"
	"time"

	// the tail every patient shares: "stuck" once hung, then the
	// dump HANGDOC_DUMP asks for
	"github.com/hangdoc/hangdoc/testdata/gorun/selfdump"
)

type result struct {
	body string
	err  error
}

func fetch(url string, out chan<- result) {
	time.Sleep(50 * time.Millisecond) // slower than the caller's patience
	out <- result{body: "<html>" + url}
}

func get(url string) (string, error) {
	out := make(chan result)
	go fetch(url, out)
	select {
	case r := <-out:
		return r.body, r.err
	case <-time.After(10 * time.Millisecond):
		return "", errors.New("timeout")
	}
}

func main() {
	if _, err := get("http://example.invalid/"); err == nil {
		panic("no timeout")
	}
	selfdump.Stuck(200 * time.Millisecond)
	for {
		time.Sleep(500 * time.Millisecond)
		runtime.GC()
	}
}
