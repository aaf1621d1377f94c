// Command bigdump writes a large dump for `make bench`:
//
//	go run ./internal/bigdump/cmd/bigdump -kind gdb -mb 32 > big.txt
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hangdoc/hangdoc/internal/bigdump"
)

func main() {
	kind := flag.String("kind", "gdb", "gdb or goroutines")
	mb := flag.Int("mb", 32, "size in MiB")
	root := flag.String("root", ".", "the repository's top folder")
	flag.Parse()
	b, err := bigdump.FromRepo(*root, *kind, *mb<<20)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Stdout.Write(b)
}
