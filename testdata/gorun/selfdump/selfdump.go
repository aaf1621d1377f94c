// Package selfdump is the dump-on-request tail the Go patients share:
// with HANGDOC_DUMP=pprof|stack|debug a patient that has reached its
// hang writes that goroutine dump to stdout and exits (gen.sh takes the
// stored dumps under testdata/dumps/goroutines this way).
package selfdump

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
)

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
