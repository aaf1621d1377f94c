// Command hangdoc tells why a process is stuck.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes scripts can branch on.
const (
	exitOK       = 0 // report written, nothing named as hung
	exitHang     = 1 // a hang was named
	exitUsage    = 2 // bad flags or arguments
	exitAnalysis = 3 // could not analyse (no such process, no permission, …)
)

// usageError marks errors that are the caller's to fix in the command line.
type usageError struct{ error }

func main() {
	ios := systemStreams()
	root := newRootCmd(ios)
	err := root.Execute()
	if err == nil {
		os.Exit(ios.exitCode)
	}
	fmt.Fprintf(ios.errOut, "hangdoc: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		os.Exit(exitUsage)
	}
	os.Exit(exitAnalysis)
}

func newRootCmd(ios *ioStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "hangdoc",
		Short: "Tell why a process is stuck",
		Long: `hangdoc attaches to a stuck process, samples every thread's stack without
harming it, and says why it is stuck.

Exit codes: 0 report written, 1 a hang was named, 2 usage error,
3 could not analyse. hangdoc run passes on the exit code of a command that
finishes in time, and exits 124 when it outlived --timeout and nothing
looks hung, 128+N when hangdoc got signal N and nothing looks hung
(see hangdoc run --help).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(ios.out)
	root.SetErr(ios.errOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see `%s --help`)", err, c.CommandPath())}
	})
	root.AddCommand(newAttachCmd(ios), newAnalyzeCmd(ios), newRunCmd(ios), newSignaturesCmd(ios), newVersionCmd(ios))
	withVersionFlag(root)
	return root
}
