package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/stacks"
)

// formats are the values --format takes.
var formats = []string{"text", "json", "markdown", "dot"}

// reportOptions are the flags every command that ends in a report shares.
type reportOptions struct {
	format     string
	color      string
	rules      string
	debuginfod string
}

func (o *reportOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "text", "output format: text, json, markdown (for bug trackers) or dot (the wait-for graph for Graphviz)")
	f.StringVar(&o.color, "color", "auto", "color: auto, always or never (NO_COLOR is honoured)")
	f.StringVar(&o.rules, "rules", "", "a JSON file of known-issue rules to add to the built-in ones (listed by hangdoc signatures)")
	f.StringVar(&o.debuginfod, "debuginfod", "on", "on: fetch debug files missing on disk from the servers in DEBUGINFOD_URLS (before any thread is stopped, within 10s, cached); off: never")
	cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
	cmd.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]string{"auto", "always", "never"}, cobra.ShellCompDirectiveNoFileComp))
}

// check validates the flags and loads the rules, before any work is done.
func (o *reportOptions) check() ([]heuristics.Rule, error) {
	if !slices.Contains(formats, o.format) {
		return nil, usageError{fmt.Errorf("--format %q: want text, json, markdown or dot", o.format)}
	}
	if o.color != "auto" && o.color != "always" && o.color != "never" {
		return nil, usageError{fmt.Errorf("--color %q: want auto, always or never", o.color)}
	}
	if o.debuginfod != "on" && o.debuginfod != "off" && o.debuginfod != "" {
		return nil, usageError{fmt.Errorf("--debuginfod %q: want on or off", o.debuginfod)}
	}
	if o.rules == "" {
		return nil, nil
	}
	rules, err := heuristics.LoadRulesFile(o.rules)
	if err != nil {
		return nil, usageError{err}
	}
	return rules, nil
}

// diagnoseAndReport runs the heuristics, writes the report and sets the
// exit code: exitHang when a hang was named.
func (o *reportOptions) diagnoseAndReport(ios *ioStreams, snap *stacks.Snapshot, rules []heuristics.Rule) error {
	res := heuristics.Diagnose(snap, heuristics.Options{Rules: rules})
	diags := res.Diagnoses
	for _, d := range diags {
		if d.Deadlock {
			ios.exitCode = exitHang
			break
		}
	}
	if ios.leftOut && ios.exitCode != exitHang {
		ios.exitCode = exitAnalysis
	}
	if len(diags) == 0 && ios.exitCode == exitOK && snap.Source != "attach" && snap.Source != "core" {
		// a paste, read, and no verdict of any kind (not even "sleeping"):
		// the evidence is too thin, which is not "nothing looks hung"
		ios.exitCode = exitNoVerdict
		fmt.Fprintf(ios.errOut, "hangdoc: no verdict from this evidence (%s); %s\n", stacks.Holds(snap), stacks.WhatToPaste(snap.Source))
	}
	width := 0
	if ios.outIsTerminal {
		width = terminalWidth(ios.out)
	}
	return writeReport(ios.out, o.format, res, report.TextOptions{Color: ios.colorEnabled(o.color), Width: width}, commandLine(os.Args))
}

// writeReport writes the report in format (one of formats) to w: the one
// place the command layer picks a renderer. text is for the text
// format; cmdLine ends a Markdown report.
func writeReport(w io.Writer, format string, res *heuristics.Result, text report.TextOptions, cmdLine string) error {
	switch format {
	case "json":
		return report.JSON(w, res)
	case "markdown":
		return report.Markdown(w, res, report.MarkdownOptions{Version: versionString(), CommandLine: cmdLine})
	case "dot":
		return report.Dot(w, res)
	}
	return report.Text(w, res, text)
}

// terminalWidth is the width of the terminal out writes to, or 0 when it
// cannot tell (not a file, not a terminal).
func terminalWidth(out io.Writer) int {
	f, ok := out.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 0
	}
	return int(ws.Col)
}

// commandLine is argv as a shell would take it back, for the last line
// of a markdown report: the program by its base name (not the path it was
// installed at), each argument quoted when the shell would split or
// expand it.
func commandLine(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	words := []string{filepath.Base(argv[0])}
	for _, a := range argv[1:] {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// debuginfodOptions says how attach fetches debug files: never with
// --debuginfod=off; with a line per fetch on stderr when it is a terminal.
func (o *reportOptions) debuginfodOptions(ios *ioStreams) attach.DebuginfodOptions {
	d := attach.DebuginfodOptions{Off: o.debuginfod == "off"}
	if writerIsTerminal(ios.errOut) {
		d.Progress = ios.errOut
	}
	return d
}
