// Package bigdump makes the large dumps that the scale tests and `make
// bench` feed to hangdoc and to its peers (pt-pmp, panicparse): the
// threads of a real stored dump repeated under new numbers until the
// input reaches a size, as a production server's dump would hold them.
package bigdump

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// GDBSource and GoSources are the stored real dumps the big ones repeat.
const GDBSource = "testdata/dumps/gdb/threads10.txt"

var GoSources = []string{"abba_sigquit.txt", "rlock_sigquit.txt", "chansend_sigquit.txt", "waitgroup_sigquit.txt",
	"leak_sigquit.txt", "deadlock_fatal.txt", "gotest_timeout.txt", "go119_abba_sigquit.txt", "abba_sigquit_system.txt"}

var gdbHead = regexp.MustCompile(`^Thread \d+ \(Thread (0x[0-9a-f]+) \(LWP \d+\)`)

// GDB returns a gdb `thread apply all bt` dump of about size bytes made
// of the thread blocks of the gdb dump text, renumbered (gdb numbers
// threads downwards) with fresh LWPs.
func GDB(text string, size int) ([]byte, error) {
	var blocks []string
	for _, blk := range strings.Split(text, "\n\n") {
		if strings.HasPrefix(blk, "Thread ") {
			blk, _, _ = strings.Cut(blk, "\n[Inferior ")
			blocks = append(blocks, strings.TrimRight(blk, "\n"))
		}
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("bigdump: no thread blocks in the gdb dump")
	}
	shortest := len(blocks[0])
	for _, blk := range blocks {
		shortest = min(shortest, len(blk))
	}
	n := size/shortest + 1
	var b bytes.Buffer
	b.Grow(size + 64<<10)
	b.WriteString("[Thread debugging using libthread_db enabled]\n")
	for i := 0; b.Len() < size; i++ {
		no := strconv.Itoa(n - i)
		lwp := strconv.Itoa(100000 + n - i)
		b.WriteString("\n")
		b.WriteString(gdbHead.ReplaceAllString(blocks[i%len(blocks)], "Thread "+no+" (Thread ${1} (LWP "+lwp+")"))
		b.WriteString("\n")
	}
	b.WriteString("[Inferior 1 (process 99999) detached]\n")
	return b.Bytes(), nil
}

var goID = regexp.MustCompile(`^\d+`)

// Goroutines returns a SIGQUIT goroutine dump of about size bytes made of
// the goroutines of the dump texts under fresh ids. A running goroutine
// shown with its stack comes once, first: in a real dump only the one
// that prints it is (the splitter takes a second for another dump,
// stacks/split_edges.go).
func Goroutines(texts []string, size int) ([]byte, error) {
	var blocks []string
	runner := ""
	for _, text := range texts {
		for _, blk := range strings.Split(text, "\n\n") {
			if !strings.HasPrefix(blk, "goroutine ") || strings.HasPrefix(blk, "goroutine 0 ") {
				continue
			}
			blk = blk[strings.IndexByte(blk, ' ')+1:]
			if runsWithStack(blk) {
				if runner == "" {
					runner = blk
				}
				continue
			}
			blocks = append(blocks, blk)
		}
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("bigdump: no goroutines in the dumps")
	}
	var b bytes.Buffer
	b.Grow(size + 64<<10)
	b.WriteString("SIGQUIT: quit\nPC=0x486121 m=0 sigcode=0\n")
	id := 1
	write := func(blk string) {
		b.WriteString("\ngoroutine ")
		b.WriteString(strconv.Itoa(id))
		b.WriteString(goID.ReplaceAllString(blk, ""))
		b.WriteByte('\n')
		id++
	}
	if runner != "" {
		write(runner)
	}
	for i := 0; b.Len() < size; i++ {
		write(blocks[i%len(blocks)])
	}
	return b.Bytes(), nil
}

// runsWithStack says whether a goroutine's block (its header without
// "goroutine ") is a running goroutine with its stack printed.
func runsWithStack(blk string) bool {
	head, rest, _ := strings.Cut(blk, "\n")
	return strings.Contains(head, "[running") && !strings.Contains(head, " gp=") && rest != "" &&
		!strings.HasPrefix(strings.TrimSpace(rest), "goroutine running on other thread")
}

// FromRepo builds the dump of kind "gdb" or "goroutines" from the stored
// dumps under root, the repository's top folder.
func FromRepo(root, kind string, size int) ([]byte, error) {
	switch kind {
	case "gdb":
		text, err := os.ReadFile(filepath.Join(root, GDBSource))
		if err != nil {
			return nil, err
		}
		return GDB(string(text), size)
	case "goroutines":
		var texts []string
		for _, name := range GoSources {
			text, err := os.ReadFile(filepath.Join(root, "testdata/dumps/goroutines", name))
			if err != nil {
				return nil, err
			}
			texts = append(texts, string(text))
		}
		return Goroutines(texts, size)
	}
	return nil, fmt.Errorf("bigdump: unknown kind %q (gdb or goroutines)", kind)
}
