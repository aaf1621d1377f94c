// Package selfdump is the tail the Go patients share once they have
// reached their hang: they say "stuck" (what the tests and gen.sh wait
// for) and, with HANGDOC_DUMP=pprof|stack|debug, write that goroutine
// dump to stdout and exit (gen.sh takes the stored dumps under
// testdata/dumps/goroutines this way).
package selfdump

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"time"
)

// Stuck lets the hang settle for settle, runs the GC (which records how
// long each goroutine has waited), prints "stuck" and then does what
// OnRequest does.
func Stuck(settle time.Duration) {
	time.Sleep(settle)
	runtime.GC()
	fmt.Println("stuck")
	OnRequest()
}

// OnRequest writes the dump HANGDOC_DUMP names and exits; it returns
// when HANGDOC_DUMP is unset or names no dump.
func OnRequest() {
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
