// Patient: a goroutine leak. The server starts one goroutine per request
// that waits for a reply nobody sends (the client went away): after
// 10,000 requests, 10,000 goroutines are parked at one select
// (HANGDOC_LEAK_N=1000 makes 1,000, for a dump small enough to keep in
// the repository). The server's loop keeps running, so this is not a
// deadlock; it is a leak.
package main

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"time"

	// the tail every patient shares: "stuck", then the dump asked for
	"github.com/hangdoc/hangdoc/testdata/gorun/selfdump"
)

type request struct {
	id    int
	reply chan string
}

type server struct {
	ctx context.Context
}

func (s *server) handle(r *request) {
	go func() {
		select {
		case msg := <-r.reply:
			_ = msg
		case <-s.ctx.Done():
		}
	}()
}

func (s *server) serve(n int) {
	for i := 0; i < n; i++ {
		s.handle(&request{id: i, reply: make(chan string)})
	}
}

func main() {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("HANGDOC_LEAK_N")); err == nil && v > 0 {
		n = v
	}
	s := &server{ctx: context.Background()}
	s.serve(n)
	selfdump.Stuck(200 * time.Millisecond)
	for {
		time.Sleep(500 * time.Millisecond)
		runtime.GC()
	}
}
