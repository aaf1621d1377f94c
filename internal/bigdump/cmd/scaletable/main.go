// Command scaletable is the analyze half of `make bench`: it makes the
// big dumps (bigdump), runs hangdoc and its peers on the same files in
// the same run — pt-pmp on gdb dumps, panicparse's pp on goroutine
// dumps — and prints one table of wall time, peak RSS and the ratio to
// the peer. The hostile inputs (/dev/zero, junk, repeated headers) get
// hangdoc's time, memory and the first line it printed.
//
//	go run ./internal/bigdump/cmd/scaletable -hangdoc bin/hangdoc -pp /tmp/pp
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/internal/bigdump"
)

type result struct {
	wall  time.Duration
	rssKB int64
	first string // the first line of stderr, else of stdout
	err   error
}

// gnuTime is GNU time, which reports a child's peak RSS: wait4's own
// figure for a child of this process is not the child's (Go starts it
// with vfork, and Linux keeps the parent's high-water mark, which held
// a generated dump, across the exec).
const gnuTime = "/usr/bin/time"

// measure runs argv with its output discarded (kept only for the first
// line) and returns its wall time and peak resident set, from GNU time
// (from wait4 when it is missing).
func measure(timeout time.Duration, argv ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var rssFile string
	if _, err := os.Stat(gnuTime); err == nil {
		f, err := os.CreateTemp("", "scaletable-rss-")
		if err == nil {
			rssFile = f.Name()
			f.Close()
			defer os.Remove(rssFile)
			argv = append([]string{gnuTime, "-q", "-f", "%M", "-o", rssFile}, argv...)
		}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, errOut headWriter
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := result{wall: time.Since(start), err: err}
	if ps := cmd.ProcessState; ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			r.rssKB = ru.Maxrss
		}
	}
	if rssFile != "" {
		r.rssKB = 0
		if b, err := os.ReadFile(rssFile); err == nil {
			fmt.Sscan(strings.TrimSpace(string(b)), &r.rssKB)
		}
	}
	r.first = errOut.firstLine()
	if r.first == "" {
		r.first = out.firstLine()
	}
	if ctx.Err() != nil {
		r.err = fmt.Errorf("killed after %v", timeout)
	}
	return r
}

// headWriter keeps the first 4 KiB written to it and counts the rest.
type headWriter struct {
	head []byte
	n    int64
}

func (w *headWriter) Write(p []byte) (int, error) {
	if room := 4096 - len(w.head); room > 0 {
		w.head = append(w.head, p[:min(room, len(p))]...)
	}
	w.n += int64(len(p))
	return len(p), nil
}

func (w *headWriter) firstLine() string {
	s, _, _ := strings.Cut(string(w.head), "\n")
	return s
}

func main() {
	hangdoc := flag.String("hangdoc", "bin/hangdoc", "the hangdoc binary")
	pp := flag.String("pp", "", "panicparse's pp binary (empty: not compared)")
	ptpmp := flag.String("pt-pmp", "pt-pmp", "percona-toolkit's pt-pmp")
	sizes := flag.String("mb", "32,100", "dump sizes in MiB")
	dir := flag.String("dir", "", "where the inputs are written (default: a temporary folder)")
	flag.Parse()
	work := *dir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "hangdoc-scale-"); err != nil {
			fail(err)
		}
		defer os.RemoveAll(work)
	}
	fmt.Printf("%-26s %-22s %9s %10s %8s %8s\n", "input", "tool", "wall", "peak RSS", "time/peer", "RSS/input")
	for _, mb := range strings.Split(*sizes, ",") {
		var n int
		fmt.Sscan(mb, &n)
		for _, kind := range []string{"gdb", "goroutines"} {
			path := filepath.Join(work, fmt.Sprintf("%s-%dMB.txt", kind, n))
			b, err := bigdump.FromRepo(".", kind, n<<20)
			if err != nil {
				fail(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				fail(err)
			}
			size := int64(len(b))
			b = nil
			var peer result
			peerName := ""
			switch {
			case kind == "gdb" && *ptpmp != "":
				peerName, peer = "pt-pmp", measure(10*time.Minute, *ptpmp, path)
			case kind == "goroutines" && *pp != "":
				peerName, peer = "panicparse pp", measure(10*time.Minute, *pp, "-no-color", "-parse=false", path)
			}
			input := fmt.Sprintf("%s %d MB", kind, n)
			row := func(tool string, r result) {
				ratio := "—"
				if peerName != "" && peer.err == nil && peer.wall > 0 && tool != peerName {
					ratio = fmt.Sprintf("%.2fx", float64(r.wall)/float64(peer.wall))
				}
				status := ""
				if r.err != nil && !isExit(r.err, 1) && !isExit(r.err, 0) {
					status = "  (" + r.err.Error() + ")"
				}
				fmt.Printf("%-26s %-22s %8.2fs %8.0f MB %8s %8.2f%s\n", input, tool, r.wall.Seconds(), float64(r.rssKB)/1024, ratio, float64(r.rssKB*1024)/float64(size), status)
			}
			row("hangdoc analyze", measure(10*time.Minute, *hangdoc, "analyze", "--color", "never", path))
			row("hangdoc --format json", measure(10*time.Minute, *hangdoc, "analyze", "--format", "json", path))
			if peerName != "" {
				row(peerName, peer)
			}
			os.Remove(path)
		}
	}
	// Inputs that are not dumps: each must end fast, small, with one line.
	junk := filepath.Join(work, "junk-1GB.bin")
	writeFile(junk, io.LimitReader(rand.Reader, 1<<30))
	headers := filepath.Join(work, "headers-200MB.txt")
	var h bytes.Buffer
	for h.Len() < 200<<20 {
		fmt.Fprintf(&h, "Thread %d (Thread 0x7f0000000000 (LWP %d)):\n", h.Len(), h.Len())
	}
	writeFile(headers, &h)
	for _, in := range [][]string{
		{"/dev/zero (as gdb)", "--input-format", "gdb", "/dev/zero"},
		{"1 GB of random bytes", junk},
		{"1 GB random (as gdb)", "--input-format", "gdb", junk},
		{"200 MB of thread headers", headers},
	} {
		r := measure(2*time.Minute, append([]string{*hangdoc, "analyze", "--color", "never"}, in[1:]...)...)
		fmt.Printf("%-26s %-22s %8.2fs %8.0f MB   %s\n", in[0], "hangdoc analyze", r.wall.Seconds(), float64(r.rssKB)/1024, clip(r.first, 90))
	}
}

func isExit(err error, code int) bool {
	ee, ok := err.(*exec.ExitError)
	return ok && ee.ExitCode() == code
}

func writeFile(path string, r io.Reader) {
	f, err := os.Create(path)
	if err != nil {
		fail(err)
	}
	if _, err := io.Copy(f, r); err != nil {
		fail(err)
	}
	if err := f.Close(); err != nil {
		fail(err)
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scaletable:", err)
	os.Exit(2)
}
