package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/report"
)

// Exit codes of `hangdoc run`; a command that finishes in time passes
// its own on. They stay clear of the codes test runners and build tools use (pytest
// 1-5, go test 1 and 2, make 2): a failing test run is never read as a
// hang named, nor the other way round.
const (
	exitRunHang     = 121 // the command was diagnosed and a hang was named
	exitRunAnalysis = 122 // the command's tree could not be analysed; it is killed all the same
	exitRunUsage    = 125 // hangdoc run's own usage error; the command was not run (as timeout(1))
	exitTimeout     = 124 // the command outlived --timeout and nothing was named (as timeout(1))
	exitCannot      = 126 // the command was found but could not be started (as shells)
	exitNotFound    = 127 // no such command (as shells)
	exitSignal      = 128 // + N: ended by signal N (as shells)
)

type runOptions struct {
	argv     []string
	timeout  time.Duration
	report   string
	samples  int
	interval time.Duration
	reportOptions
	adopt   bool
	cmdLine string // hangdoc's own command line, for the Markdown report
}

func newRunCmd(ios *ioStreams) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [flags] [--] CMD [ARG...]",
		Short: "Run a command; if it hangs, say why, then kill it",
		Long: `run starts CMD with hangdoc's stdin, stdout and stderr, in a process group
of its own, and waits for it. If CMD finishes in time, hangdoc prints
nothing and exits with CMD's exit code (128+N when signal N ended it, as
shells do).

If CMD outlives --timeout, or hangdoc receives SIGTERM or SIGINT (what CI
runners send when a job times out or is cancelled), hangdoc samples every process of CMD's tree without harming
it and writes the report as text to stderr, to --report FILE in
--format, and, when GITHUB_STEP_SUMMARY is set, as Markdown at the end
of that file. Nothing is sent to the tree before it is diagnosed. Then
hangdoc kills the whole tree with SIGKILL: CMD's process group and every
process below CMD, also those that left the group, and daemons that
double-forked (hangdoc is the tree's subreaper). A second SIGTERM or
SIGINT while sampling cuts it short: the report shows what was read.

On a terminal, Ctrl-C diagnoses CMD as SIGINT does, and Ctrl-Z suspends
hangdoc and CMD together (fg continues both). A CMD that reads (or, with
stty tostop, writes) the terminal is given it, as a shell gives it to a
job it brings to the foreground: it reads what is typed, and from then on
gets Ctrl-C and Ctrl-Z itself; diagnose it with --timeout or by sending
hangdoc SIGTERM.
Sampling needs ptrace permission over the tree: root, CAP_SYS_PTRACE,
or kernel.yama.ptrace_scope<=1 (CMD is hangdoc's descendant).

Exit codes (none of them a test runner's own, but for CMD's):
  CMD's code  CMD finished in time (128+N: signal N ended it)
  121         CMD was diagnosed and a hang was named
  122         CMD's tree could not be analysed (ptrace refused, …); it
              is killed all the same
  124         CMD outlived --timeout and nothing looks hung
  125         usage error; CMD was not run
  126, 127    CMD could not be started, or was not found
  128+N       hangdoc got signal N (130 SIGINT, 143 SIGTERM) and nothing
              looks hung`,
		Example: `  hangdoc run --timeout 20m -- go test ./...
  hangdoc run --timeout 15m --report hang.json --format json -- pytest -x tests/`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return runUsage(usageError{errors.New("run needs a command: hangdoc run [flags] -- CMD [ARG...] (see `hangdoc run --help`)")})
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.argv = args
			opts.adopt = adoptOrphans
			opts.cmdLine = commandLine(os.Args)
			return runUsage(runRun(cmd.Context(), opts, ios))
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return runUsage(usageError{fmt.Errorf("%w (see `%s --help`)", err, c.CommandPath())})
	})
	f := cmd.Flags()
	// Flags end at CMD: in `hangdoc run make -j8`, -j8 is make's.
	f.SetInterspersed(false)
	f.DurationVar(&opts.timeout, "timeout", 0, "diagnose and kill CMD when it runs longer than this (e.g. 20m; 0: wait for ever)")
	f.StringVar(&opts.report, "report", "", "also write the report to `FILE`, in --format")
	f.IntVar(&opts.samples, "samples", 3, "how many times to sample every thread")
	f.DurationVar(&opts.interval, "interval", 500*time.Millisecond, "time between samples")
	opts.addFlags(cmd)
	if fl := f.Lookup("format"); fl != nil {
		fl.Usage = "format of --report FILE: text, json, markdown or dot (stderr always gets text)"
	}
	return cmd
}

// runFormats are the formats --report FILE can be written in.
var runFormats = []string{"text", "json", "markdown", "dot"}

// validate checks the flags, before CMD is started.
func (o *runOptions) validate() ([]heuristics.Rule, error) {
	switch {
	case len(o.argv) == 0:
		return nil, usageError{errors.New("run needs a command: hangdoc run [flags] -- CMD [ARG...]")}
	case o.timeout < 0:
		return nil, usageError{fmt.Errorf("--timeout %v: want 0 (none) or more", o.timeout)}
	case o.samples < 1 || o.samples > 1000:
		return nil, usageError{fmt.Errorf("--samples %d: want 1 to 1000", o.samples)}
	case o.interval <= 0:
		return nil, usageError{fmt.Errorf("--interval %v: want more than 0", o.interval)}
	case !slices.Contains(runFormats, o.format):
		return nil, usageError{fmt.Errorf("--format %q: want %s", o.format, strings.Join(runFormats, ", "))}
	}
	// The shared checks (--color, --rules); the format is run's own.
	shared := o.reportOptions
	shared.format = "text"
	rules, err := shared.check()
	if err != nil {
		return nil, err
	}
	if o.report != "" {
		if err := checkWritable(o.report); err != nil {
			return nil, usageError{fmt.Errorf("--report: %v", err)}
		}
	}
	return rules, nil
}

// checkWritable makes sure the report can be written at the end, without
// leaving a file behind when CMD finishes in time and without clobbering
// one that is there.
func checkWritable(path string) error {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	if errors.Is(statErr, fs.ErrNotExist) {
		os.Remove(path)
	}
	return nil
}

// runRun runs the command and, when it hangs, diagnoses and kills its
// tree. It sets ios.exitCode; an error is a usage error or exitRunAnalysis.
func runRun(ctx context.Context, opts *runOptions, ios *ioStreams) error {
	rules, err := opts.validate()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	// Catch the signals before CMD starts: from then on, SIGTERM and
	// SIGINT mean "diagnose", never hangdoc's death.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if opts.adopt {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			opts.adopt = false // an old kernel: orphans go to init as before
		}
	}

	cmd := exec.Command(opts.argv[0], opts.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = ios.in, ios.out, ios.errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// On a terminal, CMD's group becomes its foreground group when it
	// wants the terminal (runterm.go).
	term := foregroundTerminal(ios.in, ios.errOut, ios.out)
	// Only when hangdoc's streams are not files (tests) does Wait copy
	// output; a grandchild holding the pipe must not stall it.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(ios.errOut, "hangdoc: %v\n", err)
		ios.exitCode = exitCannot
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			ios.exitCode = exitNotFound
		}
		return nil
	}
	term.give(cmd.Process.Pid)
	defer term.takeBack()
	t := &tree{child: cmd.Process.Pid, adopt: opts.adopt}
	// Watch CMD without reaping it: while it is unreaped its pid, which
	// is also its process group's id, cannot name another process.
	exited := make(chan struct{})
	go func() {
		t.waitExit()
		close(exited)
	}()
	stopReaper := t.reapAdopted()
	defer stopReaper()

	var timeout <-chan time.Time
	if opts.timeout > 0 {
		timer := time.NewTimer(opts.timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	var why string
	var sig syscall.Signal
	select {
	case <-exited:
		term.takeBack()
		return finishRun(cmd, ios)
	case <-timeout:
		why = fmt.Sprintf("outlived --timeout %v", opts.timeout)
	case s := <-sigs:
		sig, _ = s.(syscall.Signal)
		why = fmt.Sprintf("was running when hangdoc got %s", signalName(sig))
	}
	// hangdoc reports on the terminal, and a second Ctrl-C must reach it.
	term.takeBack()
	select {
	case <-exited: // it finished just now: not hung
		return finishRun(cmd, ios)
	default:
	}

	// No reaping while the tree is sampled: a wait for an adopted orphan
	// that is being traced would take its ptrace stop from the tracer.
	t.reaping.Lock()
	named, diagErr := opts.diagnose(ctx, ios, t, why, sigs, rules)
	t.reaping.Unlock()
	n := t.kill()
	if err := cmd.Wait(); err != nil && !isExitError(err) {
		fmt.Fprintf(ios.errOut, "hangdoc: reaping pid %d: %v\n", t.child, err)
	}
	t.reapAll()

	code, meaning := exitTimeout, "nothing looks hung"
	switch {
	case diagErr != nil:
		code, meaning = exitRunAnalysis, "could not analyse"
	case named:
		code, meaning = exitRunHang, "a hang was named"
	case sig != 0:
		code = exitSignal + int(sig)
	}
	fmt.Fprintf(ios.errOut, "hangdoc: killed pid %d and its tree (%s); exit %d: %s\n", t.child, countNoun(n, "process", "processes"), code, meaning)
	if diagErr != nil {
		return codedError{diagErr, exitRunAnalysis} // main prints it
	}
	ios.exitCode = code
	return nil
}

// runUsage gives a usage error of run its own exit code: 2 is a build
// tool's and a test runner's.
func runUsage(err error) error {
	var ue usageError
	var ce codedError
	if errors.As(err, &ue) && !errors.As(err, &ce) {
		return codedError{err, exitRunUsage}
	}
	return err
}

// finishRun reaps CMD, which finished by itself, and passes its exit
// status on.
func finishRun(cmd *exec.Cmd, ios *ioStreams) error {
	err := cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		ios.exitCode = exitSignal + int(ws.Signal())
	case cmd.ProcessState != nil && cmd.ProcessState.Exited():
		ios.exitCode = cmd.ProcessState.ExitCode()
	default:
		return fmt.Errorf("pid %d: %v", cmd.Process.Pid, err)
	}
	return nil
}

func isExitError(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// diagnose samples the tree and writes the reports. It says whether a
// hang was named; an error means nothing could be read.
func (o *runOptions) diagnose(ctx context.Context, ios *ioStreams, t *tree, why string, sigs <-chan os.Signal, rules []heuristics.Rule) (bool, error) {
	pids := t.members()
	fmt.Fprintf(ios.errOut, "hangdoc: %s (pid %d) %s: sampling its %s\n", shellJoin(o.argv), t.child, why, countNoun(len(pids), "process", "processes"))

	// A further signal cuts sampling short; what was read is reported.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sampled := make(chan struct{})
	defer close(sampled)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-sampled:
		}
	}()

	pr := newProgress(ios.errOut)
	snap, notes, err := attachTree(ctx, pids, attach.Options{Samples: o.samples, Interval: o.interval, Progress: pr.update,
		Debuginfod: o.debuginfodOptions(ios)})
	pr.clear()
	for _, n := range notes {
		if err == nil || n != err.Error() { // else main says it, once
			fmt.Fprintf(ios.errOut, "hangdoc: left out %s\n", n)
		}
	}
	if errors.Is(err, errTreeGone) {
		fmt.Fprintf(ios.errOut, "hangdoc: %v\n", err)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	res := heuristics.Diagnose(snap, heuristics.Options{Rules: rules})
	named := slices.ContainsFunc(res.Diagnoses, func(d heuristics.Diagnosis) bool { return d.Deadlock })

	if err := writeReport(ios.errOut, "text", res, report.TextOptions{Color: colorOn(o.color, ios.errOut), Width: terminalWidth(ios.errOut)}, o.cmdLine); err != nil {
		return named, err
	}
	if o.report != "" {
		write := func(w io.Writer) error { return writeReport(w, o.format, res, report.TextOptions{}, o.cmdLine) }
		if err := writeFile(o.report, false, write); err != nil {
			fmt.Fprintf(ios.errOut, "hangdoc: --report: %v\n", err)
		}
	}
	if path := os.Getenv("GITHUB_STEP_SUMMARY"); path != "" {
		head := fmt.Sprintf("### hangdoc: %s %s\n\n", report.CodeSpan(shellJoin(o.argv)), why)
		err := writeFile(path, true, func(w io.Writer) error {
			if _, err := io.WriteString(w, head); err != nil {
				return err
			}
			return writeReport(w, "markdown", res, report.TextOptions{}, o.cmdLine)
		})
		if err != nil {
			fmt.Fprintf(ios.errOut, "hangdoc: GITHUB_STEP_SUMMARY: %v\n", err)
		}
	}
	return named, nil
}

// writeFile writes a file through write: replaced, or appended to (a
// step summary other steps also write).
func writeFile(path string, appendTo bool, write func(io.Writer) error) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return err
	}
	err = write(f)
	if appendTo && err == nil {
		_, err = io.WriteString(f, "\n")
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// colorOn resolves --color for the stream w (stderr, here).
func colorOn(mode string, w io.Writer) bool { return colorFor(mode, writerIsTerminal(w)) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return s.String()
}

// shellJoin quotes argv as a POSIX shell would need it.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return report.Sanitize(strings.Join(q, " "))
}
