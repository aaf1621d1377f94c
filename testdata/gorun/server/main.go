// Patient (control): a healthy, busy TCP server on loopback. An echo
// server accepts connections and serves each in a goroutine; four
// clients hammer it with requests and check every reply. Nothing is
// stuck: hangdoc must say it is working (progressing) or waiting on I/O
// (io-wait), never name a deadlock.
//
// It prints "stuck" (the word every patient here prints when it is in
// the state to be looked at) once the clients have made a thousand round
// trips, then runs until killed. With HANGDOC_DUMP=pprof|stack|debug it
// writes that dump to stdout and exits instead; SIGQUIT prints the dump.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"

	// the dump on HANGDOC_DUMP, one piece for every patient
	"github.com/hangdoc/hangdoc/testdata/gorun/selfdump"
)

var trips atomic.Int64

func serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			panic(err)
		}
		go echo(c)
	}
}

func echo(c net.Conn) {
	defer c.Close()
	io.Copy(c, c)
}

func client(addr string, id int) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		panic(err)
	}
	r := bufio.NewReader(c)
	for i := 0; ; i++ {
		msg := fmt.Sprintf("client %d request %d\n", id, i)
		if _, err := io.WriteString(c, msg); err != nil {
			panic(err)
		}
		reply, err := r.ReadString('\n')
		if err != nil || reply != msg {
			panic(fmt.Sprintf("client %d: reply %q, %v", id, reply, err))
		}
		trips.Add(1)
	}
}

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go serve(ln)
	for i := 0; i < 4; i++ {
		go client(ln.Addr().String(), i)
	}
	for trips.Load() < 1000 {
		runtime.Gosched()
	}
	fmt.Println("stuck")
	selfdump.OnRequest()
	select {} // the server and its clients run on
}
