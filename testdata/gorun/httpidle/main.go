// Patient (control): an idle HTTP server. net/http serves on loopback
// (an ephemeral port) and nobody calls it: the accept loop waits in the
// netpoller, the other goroutines wait for work. Nothing is stuck:
// hangdoc must not claim a deadlock (all goroutines asleep is not a
// deadlock when one waits on the network).
//
// It prints "port=<port>" and then "stuck" (the word every patient here
// prints when it is in the state to be looked at) once one request to
// itself has been answered, then serves until killed.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	go func() { panic(http.Serve(ln, mux)) }()
	// One round trip: the server is up and has gone back to waiting.
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		panic(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	fmt.Fprintf(os.Stdout, "port=%d\nstuck\n", ln.Addr().(*net.TCPAddr).Port)
	select {}
}
