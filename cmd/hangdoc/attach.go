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
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/report"
)

type attachOptions struct {
	pids     []int
	samples  int
	interval time.Duration
	format   string
	color    string
	rules    string
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
	f.StringVar(&opts.format, "format", "text", "output format: text or json")
	f.StringVar(&opts.color, "color", "auto", "color: auto, always or never (NO_COLOR is honoured)")
	f.StringVar(&opts.rules, "rules", "", "a JSON file of known-issue rules to add to the built-in ones (see `hangdoc signatures`)")
	cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]string{"auto", "always", "never"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runAttach(ctx context.Context, opts *attachOptions, ios *ioStreams) error {
	if opts.samples < 1 || opts.samples > 1000 {
		return usageError{fmt.Errorf("--samples %d: want 1 to 1000", opts.samples)}
	}
	if opts.format != "text" && opts.format != "json" {
		return usageError{fmt.Errorf("--format %q: want text or json", opts.format)}
	}
	if opts.color != "auto" && opts.color != "always" && opts.color != "never" {
		return usageError{fmt.Errorf("--color %q: want auto, always or never", opts.color)}
	}
	var rules []heuristics.Rule
	if opts.rules != "" {
		var err error
		if rules, err = heuristics.LoadRulesFile(opts.rules); err != nil {
			return usageError{err}
		}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	// Ctrl-C during sampling ends it early and reports what was read.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	snap, err := attach.Attach(ctx, opts.pids, attach.Options{Samples: opts.samples, Interval: opts.interval})
	if err != nil {
		return err
	}
	diags := heuristics.Diagnose(snap, heuristics.Options{Rules: rules})
	for _, d := range diags {
		if d.Deadlock {
			ios.exitCode = exitHang
			break
		}
	}
	if opts.format == "json" {
		return report.JSON(ios.out, snap, diags)
	}
	return report.Text(ios.out, snap, diags, report.TextOptions{Color: ios.colorEnabled(opts.color)})
}
