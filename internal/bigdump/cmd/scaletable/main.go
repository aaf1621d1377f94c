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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/internal/bigdump"
)

type result struct {
	wall  time.Duration
	cpu   time.Duration // user + system
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
			argv = append([]string{gnuTime, "-q", "-f", "%M %U %S", "-o", rssFile}, argv...)
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
		r.cpu = ps.UserTime() + ps.SystemTime()
	}
	if rssFile != "" {
		r.rssKB = 0
		if b, err := os.ReadFile(rssFile); err == nil {
			// the last line: GNU time writes "Command exited with non-zero status" before it
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			var u, sys float64
			if n, _ := fmt.Sscan(lines[len(lines)-1], &r.rssKB, &u, &sys); n == 3 {
				r.cpu = time.Duration((u + sys) * float64(time.Second))
			}
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
	repeat := flag.Int("repeat", 3, "rounds of each input (medians are printed)")
	hostile := flag.Bool("hostile", true, "also run the inputs that are not dumps (/dev/zero, 1 GB of junk, 200 MB of headers)")
	flag.Parse()
	work := *dir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "hangdoc-scale-"); err != nil {
			fail(err)
		}
		defer os.RemoveAll(work)
	}
	fmt.Printf("load average before: %s\n", loadAvg())
	fmt.Printf("%-18s %-22s %8s %8s %10s %9s %8s %9s\n", "input", "tool", "wall", "CPU", "peak RSS", "time/peer", "CPU/peer", "RSS/input")
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
			type tool struct {
				name string
				argv []string
				runs []result
			}
			tools := []*tool{
				{name: "hangdoc analyze", argv: []string{*hangdoc, "analyze", "--color", "never", path}},
				{name: "hangdoc --format json", argv: []string{*hangdoc, "analyze", "--format", "json", path}},
			}
			var peer *tool
			switch {
			case kind == "gdb" && *ptpmp != "":
				peer = &tool{name: "pt-pmp", argv: []string{*ptpmp, path}}
			case kind == "goroutines" && *pp != "":
				peer = &tool{name: "panicparse pp", argv: []string{*pp, "-no-color", "-parse=false", path}}
			}
			all := tools
			if peer != nil {
				all = append([]*tool{peer}, tools...)
			}
			for round := 0; round < *repeat; round++ {
				order := slices.Clone(all)
				if round%2 == 1 {
					slices.Reverse(order)
				}
				for _, t := range order {
					t.runs = append(t.runs, measure(10*time.Minute, t.argv...))
				}
			}
			input := fmt.Sprintf("%s %d MB", kind, n)
			for _, t := range all {
				var walls, cpus, ratios, cpuRatios []float64
				var rss int64
				var failed error
				for i, r := range t.runs {
					walls = append(walls, r.wall.Seconds())
					cpus = append(cpus, r.cpu.Seconds())
					rss = max(rss, r.rssKB)
					if r.err != nil && !isExit(r.err, 1) && !isExit(r.err, 0) {
						failed = r.err
					}
					if peer != nil && t != peer && peer.runs[i].err == nil && peer.runs[i].wall > 0 {
						ratios = append(ratios, r.wall.Seconds()/peer.runs[i].wall.Seconds())
						if peer.runs[i].cpu > 0 {
							cpuRatios = append(cpuRatios, r.cpu.Seconds()/peer.runs[i].cpu.Seconds())
						}
					}
				}
				ratio, cpuRatio := "—", "—"
				if len(ratios) > 0 {
					ratio = fmt.Sprintf("%.2fx", median(ratios))
				}
				if len(cpuRatios) > 0 {
					cpuRatio = fmt.Sprintf("%.2fx", median(cpuRatios))
				}
				status := ""
				if failed != nil {
					status = "  (" + failed.Error() + ")"
				}
				fmt.Printf("%-18s %-22s %7.2fs %7.2fs %7.0f MB %9s %8s %9.2f%s\n", input, t.name, median(walls), median(cpus), float64(rss)/1024, ratio, cpuRatio, float64(rss*1024)/float64(size), status)
			}
			os.Remove(path)
		}
	}
	fmt.Printf("load average after: %s\n", loadAvg())
	if !*hostile {
		return
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

// median of xs (not empty).
func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

// loadAvg is the machine's 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
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
