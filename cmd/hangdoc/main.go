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
	// exitNoVerdict: a pasted dump was read, and it holds too little to
	// say anything (one thread of many, a cut dump, no symbols): not the
	// "nothing looks hung" of exitOK.
	exitNoVerdict = 4
)

// usageError marks errors that are the caller's to fix in the command line.
type usageError struct{ error }

// codedError is an error with the exit code it ends hangdoc with, for
// the codes of `hangdoc run` that must not look like its command's.
type codedError struct {
	error
	code int
}

func (e codedError) Unwrap() error { return e.error }

// exitCodeOf is the exit code an error from a command ends hangdoc with.
func exitCodeOf(err error) int {
	var ce codedError
	var ue usageError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command"):
		return exitUsage
	}
	return exitAnalysis
}

func main() {
	ios := systemStreams()
	root := newRootCmd(ios)
	err := root.Execute()
	stopCPUProfile()
	if err == nil {
		os.Exit(ios.exitCode)
	}
	fmt.Fprintf(ios.errOut, "hangdoc: %v\n", err)
	os.Exit(exitCodeOf(err))
}

func newRootCmd(ios *ioStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "hangdoc",
		Short: "Tell why a process is stuck",
		Long: `hangdoc attaches to a stuck process, samples every thread's stack without
harming it, and says why it is stuck.

Exit codes of attach, analyze and signatures: 0 report written, nothing
looks hung; 1 a hang was named; 2 usage error; 3 could not analyse; 4
(analyze) the input holds too little for any verdict.
hangdoc run passes on the exit code of a command that finishes in time and
uses codes a test runner does not: 121 a hang was named, 122 could not
analyse, 124 it outlived --timeout and nothing looks hung, 125 usage
error, 126/127 cannot start / not found, 128+N when hangdoc got signal N
and nothing looks hung (see hangdoc run --help).`,
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
