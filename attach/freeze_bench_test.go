package attach_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/internal/patient"
)

// What an attach costs the target, side by side with gdb and eu-stack.
//
// The patient is threads200 with N blocked threads plus a heartbeat thread
// that wakes every millisecond and, on SIGUSR1, prints the longest gap
// between two of its wake-ups since the previous SIGUSR1. One measurement:
// SIGUSR1 (the answer is discarded: it resets the heartbeat), one run of the
// tool, SIGUSR1 again; the longest freeze is that gap minus the 1 ms period.
// It is the freeze of a thread that was running (sleeping 1 ms at a time),
// as the patient itself saw it. hangdoc also says how long it held any
// thread in a ptrace stop (Stats.MaxHeld): blocked threads it reads through
// /proc are not stopped at all, so the two figures measure different things.
//
//	go test ./attach -run '^$' -bench Freeze -benchtime 1x
//	HANGDOC_FREEZE_TABLE=1 go test ./attach -run TestFreezeTable -v

// freezeThreadCounts are the patient sizes the benchmark measures;
// freezeTableCounts those of the table `make bench` prints, up to a
// production server's 10,000 threads.
var (
	freezeThreadCounts = []int{10, 200, 2000}
	freezeTableCounts  = []int{10, 200, 2000, 10000}
)

const (
	heartbeatPeriod = time.Millisecond
	askTimeout      = 10 * time.Second
	// toolTimeout bounds one run of gdb or eu-stack; gdb 13 takes about
	// 2 s on 2000 threads, older ones much longer.
	toolTimeout = 3 * time.Minute
	// idleFor is how long the "none" tool waits: the noise floor of the
	// heartbeat on this machine, with no tool attached.
	idleFor = 100 * time.Millisecond
)

// freezeTool is one way of reading every thread's stack.
type freezeTool struct {
	name    string
	require string // executable that must be on $PATH, or ""
	run     func(ctx context.Context, pid, threads int) (toolRun, error)
}

// toolRun is what one run of a tool reports about itself.
type toolRun struct {
	held  time.Duration // hangdoc only: longest ptrace stop of a thread
	stops int           // hangdoc only: ptrace stops
}

// freezeSample is one measured run.
type freezeSample struct {
	freeze time.Duration // heartbeat's longest gap minus its period
	gap    time.Duration // heartbeat's longest gap
	wall   time.Duration // the tool's run, start to end
	toolRun
}

func freezeTools() []freezeTool {
	return []freezeTool{
		{name: "none", run: func(ctx context.Context, pid, threads int) (toolRun, error) {
			time.Sleep(idleFor)
			return toolRun{}, nil
		}},
		{name: "hangdoc", run: runHangdoc(1)},
		{name: "hangdoc-3samples", run: runHangdoc(3)},
		{name: "gdb", require: "gdb", run: runGDB},
		{name: "eu-stack", require: "eu-stack", run: runEUStack},
	}
}

func runHangdoc(samples int) func(ctx context.Context, pid, threads int) (toolRun, error) {
	return func(ctx context.Context, pid, threads int) (toolRun, error) {
		snap, st, err := attach.AttachStats(ctx, []int{pid}, attach.Options{Samples: samples})
		if err != nil {
			return toolRun{}, err
		}
		r := toolRun{held: st.MaxHeld, stops: st.Stops}
		if len(snap.Processes) != 1 {
			return r, fmt.Errorf("hangdoc: %d processes in the snapshot, want 1", len(snap.Processes))
		}
		if got, want := len(snap.Processes[0].Threads), threads+2; got != want {
			return r, fmt.Errorf("hangdoc: %d threads, want %d", got, want)
		}
		return r, nil
	}
}

func runGDB(ctx context.Context, pid, threads int) (toolRun, error) {
	out, err := runDebugger(ctx, "gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off",
		"-ex", "set pagination off", "-ex", "thread apply all bt", "-p", strconv.Itoa(pid))
	if err != nil {
		return toolRun{}, err
	}
	return toolRun{}, countThreads("gdb", out, "Thread ", threads+2)
}

func runEUStack(ctx context.Context, pid, threads int) (toolRun, error) {
	out, err := runDebugger(ctx, "eu-stack", "-p", strconv.Itoa(pid))
	if err != nil {
		return toolRun{}, err
	}
	return toolRun{}, countThreads("eu-stack", out, "TID ", threads+2)
}

// countThreads checks that the tool printed one header per thread: a tool
// that skipped threads would not be compared fairly.
func countThreads(tool string, out []byte, prefix string, want int) error {
	got := 0
	for _, l := range bytes.Split(out, []byte("\n")) {
		if bytes.HasPrefix(l, []byte(prefix)) {
			got++
		}
	}
	if got != want {
		return fmt.Errorf("%s printed %d %q headers, want %d:\n%s", tool, got, prefix, want, tail(out, 2000))
	}
	return nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}

// runDebugger runs a debugger to completion and returns its output. It is
// killed with its process group when ctx ends or toolTimeout passes, and
// by the kernel if the test binary dies (Pdeathsig, tied to the forking
// thread, which is kept locked until the debugger is reaped: hangdoc's
// tracer ends OS threads of this process).
func runDebugger(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return cmd.Process.Kill()
	}
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		if err == nil {
			err = cmd.Wait()
			// Whatever the debugger left behind in its group goes too.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		done <- err
	}()
	err := <-done
	if ctx.Err() != nil {
		return out.Bytes(), fmt.Errorf("%s: killed after %v: %v\n%s", name, toolTimeout, ctx.Err(), tail(out.Bytes(), 2000))
	}
	if err != nil {
		return out.Bytes(), fmt.Errorf("%s: %v\n%s", name, err, tail(out.Bytes(), 2000))
	}
	return out.Bytes(), nil
}

// heartbeatGap asks the patient for its longest heartbeat gap since the
// previous ask, which resets it.
func heartbeatGap(tb testing.TB, p *patient.Proc) time.Duration {
	tb.Helper()
	l := p.Ask(tb, syscall.SIGUSR1, "maxgap_ns=", askTimeout)
	v, ok := strings.CutPrefix(l, "maxgap_ns=")
	if !ok {
		tb.Fatalf("patient %d: %q, want maxgap_ns=N", p.Pid, l)
	}
	ns, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		tb.Fatalf("patient %d: %q: %v", p.Pid, l, err)
	}
	return time.Duration(ns)
}

// measureFreeze runs tool once on the patient and measures what it cost.
// When b is not nil, only the tool's run is timed.
func measureFreeze(tb testing.TB, b *testing.B, p *patient.Proc, tool freezeTool, threads int) freezeSample {
	tb.Helper()
	heartbeatGap(tb, p) // reset
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	if b != nil {
		b.StartTimer()
	}
	start := time.Now()
	r, err := tool.run(ctx, p.Pid, threads)
	wall := time.Since(start)
	if b != nil {
		b.StopTimer()
	}
	if err != nil {
		tb.Fatalf("%s on %d threads: %v", tool.name, threads, err)
	}
	checkRunning(tb, p, tool.name)
	gap := heartbeatGap(tb, p)
	return freezeSample{freeze: max(gap-heartbeatPeriod, 0), gap: gap, wall: wall, toolRun: r}
}

// checkRunning fails if a tool left a thread of the patient stopped.
func checkRunning(tb testing.TB, p *patient.Proc, tool string) {
	tb.Helper()
	var stopped []int
	for try := 0; try < 100; try++ {
		tasks, err := p.Tasks()
		if err != nil {
			tb.Fatalf("patient %d: %v", p.Pid, err)
		}
		stopped = stopped[:0]
		for tid, st := range tasks {
			if st == "t" || st == "T" {
				stopped = append(stopped, tid)
			}
		}
		if len(stopped) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("%s left %d threads of patient %d stopped (%v…)", tool, len(stopped), p.Pid, stopped[:min(len(stopped), 5)])
}

func startFreezePatient(tb testing.TB, threads int) *patient.Proc {
	tb.Helper()
	patient.RequirePtrace(tb)
	bin := patient.Build(tb, "threads200.c", patient.O2g...)
	return patient.Start(tb, bin, strconv.Itoa(threads))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkFreeze reports, per patient size and tool, the longest freeze
// of the heartbeat over the iterations (freeze-ms), the mean wall time of
// one run (wall-ms, also ns/op: only the tool's run is timed) and, for
// hangdoc, its longest ptrace stop (held-ms) and stops per run. The
// patient is started once per size and shared by the tools.
func BenchmarkFreeze(b *testing.B) {
	for _, n := range freezeThreadCounts {
		b.Run(fmt.Sprintf("threads=%d", n), func(b *testing.B) {
			p := startFreezePatient(b, n)
			for _, tool := range freezeTools() {
				b.Run("tool="+tool.name, func(b *testing.B) {
					if tool.require != "" {
						patient.RequireTool(b, tool.require)
					}
					b.StopTimer()
					var maxFreeze, maxHeld, sumWall time.Duration
					stops := 0
					for i := 0; i < b.N; i++ {
						s := measureFreeze(b, b, p, tool, n)
						maxFreeze = max(maxFreeze, s.freeze)
						maxHeld = max(maxHeld, s.held)
						sumWall += s.wall
						stops += s.stops
					}
					b.ReportMetric(ms(maxFreeze), "freeze-ms")
					b.ReportMetric(ms(sumWall)/float64(b.N), "wall-ms")
					if strings.HasPrefix(tool.name, "hangdoc") {
						b.ReportMetric(ms(maxHeld), "held-ms")
						b.ReportMetric(float64(stops)/float64(b.N), "stops/op")
					}
				})
			}
		})
	}
}

// freezeRuns is how many times TestFreezeTable runs each tool on each size.
const freezeRuns = 3

// TestFreezeTable runs every tool 3 times on every patient size and prints
// a Markdown table. It takes a minute or two, so it runs only when asked:
//
//	HANGDOC_FREEZE_TABLE=1 go test ./attach -run TestFreezeTable -v
func TestFreezeTable(t *testing.T) {
	if os.Getenv("HANGDOC_FREEZE_TABLE") != "1" {
		t.Skip("set HANGDOC_FREEZE_TABLE=1 to measure the freeze table")
	}
	tools := freezeTools()
	var available []freezeTool
	for _, tool := range tools {
		if tool.require != "" {
			if _, err := exec.LookPath(tool.require); err != nil {
				t.Logf("%s not installed: no %s rows", tool.require, tool.name)
				continue
			}
		}
		available = append(available, tool)
	}

	var tb strings.Builder
	fmt.Fprintf(&tb, "Machine: %s\n\n", machine())
	fmt.Fprintf(&tb, "| threads | tool | longest freeze (ms) | hangdoc longest ptrace stop (ms) | wall (ms) | freeze ratio vs hangdoc |\n")
	fmt.Fprintf(&tb, "|---:|---|---:|---:|---:|---:|\n")
	var notes []string
	for _, n := range freezeTableCounts {
		t.Run(fmt.Sprintf("threads=%d", n), func(t *testing.T) {
			p := startFreezePatient(t, n)
			got := map[string][]freezeSample{}
			// Interleave the tools: drift on the machine hits all alike.
			for run := 0; run < freezeRuns; run++ {
				for _, tool := range available {
					s := measureFreeze(t, nil, p, tool, n)
					got[tool.name] = append(got[tool.name], s)
					t.Logf("threads=%d run %d %-16s gap %7.3f ms, wall %8.1f ms, held %.3f ms, stops %d",
						n, run+1, tool.name, ms(s.gap), ms(s.wall), ms(s.held), s.stops)
				}
			}
			ref := summarize(got["hangdoc"])
			for _, tool := range available {
				sum := summarize(got[tool.name])
				held := "—"
				if strings.HasPrefix(tool.name, "hangdoc") {
					held = fmt.Sprintf("%.3f", ms(sum.maxHeld))
				}
				name := tool.name
				if tool.name == "none" {
					name = fmt.Sprintf("none (idle %v, noise floor)", idleFor)
				}
				fmt.Fprintf(&tb, "| %d | %s | %.3f | %s | %.1f | %s |\n",
					n, name, ms(sum.maxFreeze), held, ms(sum.meanWall), ratio(sum.maxFreeze, ref.maxFreeze))
			}
			for _, name := range []string{"hangdoc", "hangdoc-3samples"} {
				var stops []string
				for _, s := range got[name] {
					stops = append(stops, strconv.Itoa(s.stops))
				}
				if len(stops) > 0 {
					notes = append(notes, fmt.Sprintf("%d threads, %s: ptrace stops per run %s (of %d threads per sample).", n, name, strings.Join(stops, ", "), n+2))
				}
			}
			if hd := got["hangdoc"]; len(hd) > 0 && n == freezeTableCounts[0] {
				notes = append(notes, fmt.Sprintf("hangdoc's first run in this process (ELF modules not yet cached) took %.1f ms on %d threads; later runs reuse the cache.", ms(hd[0].wall), n))
			}
		})
	}
	tb.WriteString("\n")
	tb.WriteString(fmt.Sprintf("Longest freeze: the patient's heartbeat thread (wakes every 1 ms) saw this much more than 1 ms between two wake-ups, max over %d runs. ", freezeRuns))
	tb.WriteString("hangdoc longest ptrace stop: Stats.MaxHeld, the longest any thread was held stopped (blocked threads are read through /proc, not stopped). ")
	tb.WriteString("Wall: mean of the runs, start to exit. Ratio: tool's longest freeze / hangdoc's (1-sample) longest freeze. ")
	tb.WriteString("gdb stops every thread for the whole run; eu-stack stops every thread too, one at a time (PTRACE_ATTACH, unwind, PTRACE_DETACH).\n")
	for _, n := range notes {
		tb.WriteString(n + "\n")
	}
	t.Log("\n" + tb.String())
	fmt.Println(tb.String())
}

type freezeSummary struct {
	maxFreeze, maxHeld, meanWall time.Duration
}

func summarize(ss []freezeSample) freezeSummary {
	var s freezeSummary
	if len(ss) == 0 {
		return s
	}
	var wall time.Duration
	for _, x := range ss {
		s.maxFreeze = max(s.maxFreeze, x.freeze)
		s.maxHeld = max(s.maxHeld, x.held)
		wall += x.wall
	}
	s.meanWall = wall / time.Duration(len(ss))
	return s
}

// ratio says how many times longer a freeze is than hangdoc's; a hangdoc
// freeze under 10 µs is below what the heartbeat can tell apart, and the
// ratio is then a lower bound against 10 µs.
func ratio(d, ref time.Duration) string {
	const floor = 10 * time.Microsecond
	if ref < floor {
		return fmt.Sprintf("≥ %.0f×", float64(d)/float64(floor))
	}
	return fmt.Sprintf("%.1f×", float64(d)/float64(ref))
}

// machine describes where the figures were taken.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "unknown kernel"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	nproc := strconv.Itoa(runtime.NumCPU())
	if out, err := exec.Command("nproc").Output(); err == nil {
		nproc = strings.TrimSpace(string(out))
	}
	s := fmt.Sprintf("nproc %s, kernel %s, %s, %s", nproc, kernel, model, runtime.Version())
	// Other work on the machine shows up as heartbeat gaps: say how busy it was.
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			s += fmt.Sprintf(", load average %s %s %s", f[0], f[1], f[2])
		}
	}
	for _, v := range [][]string{{"gdb", "--version"}, {"eu-stack", "--version"}} {
		if out, err := exec.Command(v[0], v[1]).Output(); err == nil {
			s += ", " + strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
		}
	}
	return s
}
