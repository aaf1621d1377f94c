package attach_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/internal/patient"
)

// What reading a Go program's goroutines costs it, hangdoc side by side
// with delve.
//
// The patient leaks 10,000 goroutines (parked in a select, like
// testdata/gorun/leak) and runs a heartbeat goroutine that wakes every
// millisecond; on SIGUSR1 it prints the longest gap between two wake-ups
// since the previous SIGUSR1. One measurement: SIGUSR1 (resets), one run
// of the tool, SIGUSR1 again; the freeze the program saw is that gap.
// hangdoc stops each OS thread only to copy its registers (MaxHeld is the
// longest of those stops) and reads the goroutines while the program
// runs; `dlv attach` stops every thread for its whole session (attach,
// `goroutines -t`, exit without killing).
//
//	go test ./attach -run '^$' -bench GoFreeze -benchtime 1x
//
// dlv is /tmp/hangdoc-dlv (HANGDOC_DLV overrides), built from the module
// cache so that hangdoc's go.sum stays as it is:
//
//	cd $(go env GOMODCACHE)/github.com/go-delve/delve@v1.27.2 && go build -o /tmp/hangdoc-dlv ./cmd/dlv

const goFreezeGoroutines = 10000

// goFreezePatient is the heartbeat patient's source.
const goFreezePatient = `package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

var maxGap atomic.Int64

func heartbeat() {
	last := time.Now()
	for {
		time.Sleep(time.Millisecond)
		now := time.Now()
		if gap := int64(now.Sub(last)); gap > maxGap.Load() {
			maxGap.Store(gap)
		}
		last = now
	}
}

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	never := make(chan int)
	for i := 0; i < n; i++ {
		reply := make(chan string)
		go func() {
			select {
			case <-reply:
			case <-never:
			}
		}()
	}
	go heartbeat()
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	fmt.Println("ready")
	for range usr1 {
		fmt.Printf("maxgap_ns=%d\n", maxGap.Swap(0))
	}
}
`

// buildGoFreezePatient builds the heartbeat patient into CacheDir.
func buildGoFreezePatient(b *testing.B) string {
	b.Helper()
	gobin := patient.RequireTool(b, "go")
	dir := filepath.Join(patient.CacheDir(), "gofreeze")
	bin := filepath.Join(dir, "gofreeze")
	src := filepath.Join(dir, "main.go")
	if have, err := os.ReadFile(src); err == nil && string(have) == goFreezePatient {
		if _, err := os.Stat(bin); err == nil {
			return bin
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(src, []byte(goFreezePatient), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(gobin, "build", "-o", bin, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build the freeze patient: %v\n%s", err, out)
	}
	return bin
}

// goHeartbeatGap asks the patient for its longest heartbeat gap since the
// last ask.
func goHeartbeatGap(b *testing.B, p *patient.Proc) time.Duration {
	b.Helper()
	line := p.Ask(b, syscall.SIGUSR1, "maxgap_ns=", askTimeout)
	ns, err := strconv.ParseInt(strings.TrimPrefix(line, "maxgap_ns="), 10, 64)
	if err != nil {
		b.Fatalf("patient said %q", line)
	}
	return time.Duration(ns)
}

// goFreezeRun is one measured run of a tool.
type goFreezeRun struct {
	gap, wall, held time.Duration
}

func BenchmarkGoFreeze(b *testing.B) {
	patient.RequirePtrace(b)
	p := patient.Start(b, buildGoFreezePatient(b), strconv.Itoa(goFreezeGoroutines))
	time.Sleep(200 * time.Millisecond) // the goroutines park
	dlv := os.Getenv("HANGDOC_DLV")
	if dlv == "" {
		dlv = "/tmp/hangdoc-dlv"
	}
	tools := []struct {
		name string
		run  func(b *testing.B) goFreezeRun
	}{
		{"none", func(b *testing.B) goFreezeRun { time.Sleep(idleFor); return goFreezeRun{wall: idleFor} }},
		{"hangdoc", hangdocGo(p.Pid, 1, false)},
		{"hangdoc-3samples", hangdocGo(p.Pid, 3, false)},
		// The same process read without its DWARF, as a go test binary
		// is read (goproc's layout reader instead of delve).
		{"hangdoc-nodwarf", hangdocGo(p.Pid, 1, true)},
		{"hangdoc-nodwarf-3samples", hangdocGo(p.Pid, 3, true)},
		{"dlv", dlvGoroutines(dlv, p.Pid)},
	}
	for _, tool := range tools {
		b.Run(tool.name, func(b *testing.B) {
			if tool.name == "dlv" {
				if _, err := os.Stat(dlv); err != nil {
					b.Skipf("no dlv at %s (see the comment at the top of gofreeze_bench_test.go)", dlv)
				}
			}
			var worst goFreezeRun
			for i := 0; i < b.N; i++ {
				goHeartbeatGap(b, p) // reset
				r := tool.run(b)
				r.gap = goHeartbeatGap(b, p)
				worst.gap, worst.wall, worst.held = max(worst.gap, r.gap), max(worst.wall, r.wall), max(worst.held, r.held)
			}
			b.ReportMetric(float64(worst.gap.Microseconds())/1000, "freeze-ms")
			b.ReportMetric(float64(worst.wall.Microseconds())/1000, "wall-ms")
			if strings.HasPrefix(tool.name, "hangdoc") {
				b.ReportMetric(float64(worst.held.Microseconds())/1000, "held-ms")
			}
			b.Logf("%s on %d goroutines: heartbeat gap %v, wall %v, longest ptrace stop %v",
				tool.name, goFreezeGoroutines, worst.gap, worst.wall, worst.held)
		})
	}
	checkReleased(b, p.Pid)
}

func hangdocGo(pid, samples int, withoutDWARF bool) func(b *testing.B) goFreezeRun {
	return func(b *testing.B) goFreezeRun {
		start := time.Now()
		opts := attach.Options{Samples: samples, Interval: 100 * time.Millisecond, GoWithoutDWARF: withoutDWARF}
		snap, st, err := attach.AttachStats(context.Background(), []int{pid}, opts)
		wall := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if n := len(snap.Processes[0].Threads); n < goFreezeGoroutines {
			b.Fatalf("hangdoc read %d goroutines, want at least %d (notes %v)", n, goFreezeGoroutines, snap.Processes[0].Notes)
		}
		return goFreezeRun{wall: wall, held: st.MaxHeld}
	}
}

// dlvGoroutines runs `dlv attach PID`, `goroutines -t`, `exit` and
// answers no to killing the process.
func dlvGoroutines(dlv string, pid int) func(b *testing.B) goFreezeRun {
	return func(b *testing.B) goFreezeRun {
		ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, dlv, "attach", strconv.Itoa(pid), "--allow-non-terminal-interactive")
		cmd.Stdin = strings.NewReader("goroutines -t\nexit\nn\n")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		wall := time.Since(start)
		if err != nil {
			b.Fatalf("dlv: %v\n%s", err, outputTail(out))
		}
		n := 0
		if m := dlvCount.FindSubmatch(out); m != nil {
			n, _ = strconv.Atoi(string(m[1]))
		}
		if n < goFreezeGoroutines {
			b.Fatalf("dlv listed fewer than %d goroutines:\n%s", goFreezeGoroutines, outputTail(out))
		}
		return goFreezeRun{wall: wall}
	}
}

// dlvCount is the count dlv prints after `goroutines`.
var dlvCount = regexp.MustCompile(`\[(\d+) goroutines\]`)

func outputTail(out []byte) string {
	if len(out) > 2000 {
		out = out[len(out)-2000:]
	}
	return string(out)
}
