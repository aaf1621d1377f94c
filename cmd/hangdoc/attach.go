package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hangdoc/hangdoc/attach"
)

type attachOptions struct {
	pids     []int
	samples  int
	interval time.Duration
	reportOptions
}

func newAttachCmd(ios *ioStreams) *cobra.Command {
	opts := &attachOptions{}
	cmd := &cobra.Command{
		Use:   "attach PID...",
		Short: "Sample every thread of running processes and report their stacks",
		Long: `attach samples every thread of each process several times without harming
it: nothing is written to the target, threads blocked in the kernel are read
through /proc without being stopped, and a thread is stopped (for at most
a bounded time) only when its registers are needed. If hangdoc is killed,
the target runs on.

Needs ptrace permission over the target: root, or CAP_SYS_PTRACE.`,
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
				opts.pids = append(opts.pids, pid)
			}
			return runAttach(cmd.Context(), opts, ios)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.samples, "samples", 3, "how many times to sample every thread")
	f.DurationVar(&opts.interval, "interval", 500*time.Millisecond, "time between samples")
	opts.addFlags(cmd)
	return cmd
}

func runAttach(ctx context.Context, opts *attachOptions, ios *ioStreams) error {
	if opts.samples < 1 || opts.samples > 1000 {
		return usageError{fmt.Errorf("--samples %d: want 1 to 1000", opts.samples)}
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
	pr := newProgress(ios.errOut)
	snap, err := attach.Attach(ctx, opts.pids, attach.Options{Samples: opts.samples, Interval: opts.interval, Progress: pr.update})
	pr.clear()
	if err != nil {
		return err
	}
	return opts.diagnoseAndReport(ios, snap, rules)
}
