package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/stacks"
)

type attachOptions struct {
	pids     []int
	samples  int
	interval time.Duration
	tree     bool
	threads  bool
	jvm      bool
	reportOptions
}

func newAttachCmd(ios *ioStreams) *cobra.Command {
	opts := &attachOptions{}
	cmd := &cobra.Command{
		Use:   "attach [--tree] PID...",
		Short: "Sample every thread of running processes and report their stacks",
		Long: `attach samples every thread of each process several times without harming
it: nothing is written to the target, threads blocked in the kernel are read
through /proc without being stopped, and a thread is stopped (for at most
a bounded time) only when its registers are needed. If hangdoc is killed,
the target runs on.

Several processes are sampled together, and --tree adds every descendant of
each PID (children, their children, …). Waits between them are followed: a
parent in wait4 waits on its child, a read on a pipe or a socket waits on the
process holding the other end, and the report links a process to the stuck
one it waits on ("pid 4120 waits for its child pid 4121, which is stuck in
fork-inherited-lock: …"). With --tree, descendants that exit or cannot be read
are left out, and said so on stderr.

A Go program is read goroutine by goroutine (as its SIGQUIT dump shows them):
each thread is stopped only to copy its registers, then the goroutines are
read from memory while it runs; --threads adds its OS threads.

Needs ptrace permission over the target: root, or CAP_SYS_PTRACE.`,
		Example: `  sudo hangdoc attach 4711                        # one process
  sudo hangdoc attach --tree 4700                 # a process and all its children
  sudo hangdoc attach 4711 4712                   # several, in one snapshot
  sudo hangdoc attach --samples 10 --interval 200ms 4711
  sudo hangdoc attach --format markdown 4711 > hang.md   # to paste into an issue
  sudo hangdoc attach --format json $(pgrep -x server) > hang.$(hostname).json`,
		ValidArgsFunction: completePids,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("attach needs a process id (see `hangdoc attach --help`)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				pid, err := strconv.Atoi(a)
				if err != nil || pid <= 0 {
					return usageError{fmt.Errorf("%q is not a process id", a)}
				}
				if !slices.Contains(opts.pids, pid) { // a pid named twice is one process
					opts.pids = append(opts.pids, pid)
				}
			}
			return runAttach(cmd.Context(), opts, ios)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.samples, "samples", 3, "how many times to sample every thread")
	f.DurationVar(&opts.interval, "interval", 500*time.Millisecond, "time between samples")
	f.BoolVar(&opts.tree, "tree", false, "also sample every descendant of each PID (the whole process tree)")
	f.BoolVar(&opts.threads, "threads", false, "for a Go program, also show its OS threads (its goroutines are shown either way)")
	f.BoolVar(&opts.jvm, "jvm", false, "for a JVM, read its Java threads through the JDK's jcmd (the JVM starts its attach listener thread and socket, which stay)")
	opts.addFlags(cmd)
	return cmd
}

func runAttach(ctx context.Context, opts *attachOptions, ios *ioStreams) error {
	if opts.samples < 1 || opts.samples > 1000 {
		return usageError{fmt.Errorf("--samples %d: want 1 to 1000", opts.samples)}
	}
	if opts.interval <= 0 {
		return usageError{fmt.Errorf("--interval %v: want more than 0, e.g. 200ms", opts.interval)}
	}
	rules, err := opts.check()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	// Ctrl-C during sampling ends it early and reports what was read.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	pids, err := attachableRoots(opts.pids, ios)
	if err != nil {
		return err
	}
	pr := newProgress(ios.errOut)
	aopts := attach.Options{Samples: opts.samples, Interval: opts.interval, Progress: pr.update, Threads: opts.threads, JVM: opts.jvm,
		Debuginfod: opts.debuginfodOptions(ios)}
	var snap *stacks.Snapshot
	if opts.tree {
		snap, err = attachDescendants(ctx, pids, aopts, ios)
	} else {
		snap, err = attach.Attach(ctx, pids, aopts)
	}
	pr.clear()
	if err != nil {
		return err
	}
	return opts.diagnoseAndReport(ios, snap, rules)
}

// attachableRoots keeps the pids that can be attached. Each one that
// cannot gets its error line on stderr and is left out, so one mistyped
// pid does not cost the report on the others; when none can be attached,
// the first one's error is the command's.
func attachableRoots(pids []int, ios *ioStreams) ([]int, error) {
	var ok []int
	var first error
	for _, pid := range pids {
		if err := attach.Attachable(pid); err != nil {
			if first == nil {
				first = err
			}
			if len(pids) == 1 {
				break // main says why
			}
			fmt.Fprintf(ios.errOut, "hangdoc: left out: %v\n", err)
			continue
		}
		ok = append(ok, pid)
	}
	if len(ok) == 0 {
		return nil, first
	}
	if first != nil {
		ios.leftOut = true
	}
	return ok, nil
}

// attachDescendants samples the processes named and all their
// descendants in one snapshot. A descendant that exited, is a zombie or
// cannot be read is left out (attachTree), and stderr says so.
func attachDescendants(ctx context.Context, roots []int, opts attach.Options, ios *ioStreams) (*stacks.Snapshot, error) {
	var pids []int
	for _, root := range roots {
		for _, pid := range append([]int{root}, attach.Descendants(root)...) {
			if !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	snap, notes, err := attachTree(ctx, pids, opts)
	for _, n := range notes {
		if err == nil || n != err.Error() { // else main says it, once
			fmt.Fprintf(ios.errOut, "hangdoc: left out %s\n", n)
		}
	}
	return snap, err
}
