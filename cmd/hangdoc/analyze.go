package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/stacks"
)

type analyzeOptions struct {
	reportOptions
	files       []string
	inputFormat string
	exe         string
}

func newAnalyzeCmd(ios *ioStreams) *cobra.Command {
	opts := &analyzeOptions{}
	cmd := &cobra.Command{
		Use:   "analyze FILE... (- for standard input)",
		Short: "Diagnose pasted dumps, hangdoc JSON snapshots and core files",
		Long: `analyze reads what people have when a hang happened elsewhere: a pasted gdb,
lldb or eu-stack backtrace, a Go goroutine dump, a py-spy or faulthandler
dump, a macOS sample or spindump report, a hangdoc JSON snapshot, or an ELF
core file. It runs the same heuristics as a live attach and says which
evidence the input could not give.

Several files are read as one snapshot (one per rank or host): a rank that is
not where the others are is named.

Formats: ` + strings.Join(stacks.Formats(), ", ") + `, and ELF cores.`,
		Example: `  hangdoc analyze dump.txt                   # a pasted gdb, lldb, goroutine, py-spy … dump
  pbpaste | hangdoc analyze -                # from the clipboard
  hangdoc analyze core.4711 --exe ./server   # a core file and the executable it ran
  hangdoc analyze hang.*.json                # one snapshot per rank or host, together
  hangdoc analyze --input-format gdb bt.log  # when the format is not recognised`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("analyze needs a file, or - for standard input (see `hangdoc analyze --help`)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.files = args
			return runAnalyze(opts, ios)
		},
	}
	opts.addFlags(cmd)
	cmd.Flags().StringVar(&opts.inputFormat, "input-format", "", "force the input format instead of detecting it: "+strings.Join(stacks.Formats(), ", "))
	cmd.Flags().StringVar(&opts.exe, "exe", "", "for a core file: the executable, when the core's own notes do not lead to it")
	cmd.RegisterFlagCompletionFunc("input-format", cobra.FixedCompletions(stacks.Formats(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runAnalyze(opts *analyzeOptions, ios *ioStreams) error {
	rules, err := opts.check()
	if err != nil {
		return err
	}
	mem := limitMemory(opts.files)
	defer mem.restore()
	var snaps []*stacks.Snapshot
	for _, name := range opts.files {
		snap, err := opts.read(name, ios)
		if err != nil {
			return err
		}
		if len(opts.files) > 1 {
			for _, p := range snap.Processes {
				if p.Label == "" {
					p.Label = name
				}
			}
		}
		snaps = append(snaps, snap)
	}
	return opts.diagnoseAndReport(ios, stacks.Merge(snaps...), rules)
}

// read parses one input: a core file by its ELF header, anything else as
// a dump. What a parser skipped is said on stderr, one line a range.
func (opts *analyzeOptions) read(name string, ios *ioStreams) (*stacks.Snapshot, error) {
	if name != "-" && isCore(name) {
		snap, err := attach.Core(name, attach.CoreOptions{Exe: opts.exe, Debuginfod: opts.debuginfodOptions(ios)})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return snap, nil
	}
	r := ios.in
	if name == "-" && ios.inIsTerminal {
		// Nothing is piped in: say what hangdoc waits for.
		fmt.Fprintln(ios.errOut, "hangdoc: reading from stdin… (paste the dump, then Ctrl-D)")
	}
	if name != "-" {
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file", name)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, unwrapPath(err))
		}
		defer f.Close()
		r = f
	}
	snap, skipped, format, err := stacks.Parse(r, opts.inputFormat)
	if err != nil {
		if format == "" && opts.inputFormat != "" {
			return nil, usageError{err} // --input-format names no format
		}
		return nil, fmt.Errorf("%s: %w", displayName(name), err)
	}
	// what was skipped, a line a range, the first maxSkipLines of them: a
	// large file of junk must not print one line per line of junk
	for i, s := range skipped {
		if i == maxSkipLines {
			lines := 0
			for _, r := range skipped[i:] {
				lines += r.To - r.From + 1
			}
			fmt.Fprintf(ios.errOut, "hangdoc: %s (%s): and %d more ranges skipped (%d lines, the first at line %d)\n", displayName(name), format, len(skipped)-i, lines, s.From)
			break
		}
		fmt.Fprintf(ios.errOut, "hangdoc: %s (%s): %s\n", displayName(name), format, s)
	}
	return snap, nil
}

// maxSkipLines is how many skipped ranges analyze lists.
const maxSkipLines = 10

// isCore says whether the file is an ELF core.
func isCore(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	var h [18]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false
	}
	return bytes.Equal(h[:4], []byte(elf.ELFMAG)) && elf.Type(h[16]) == elf.ET_CORE && h[17] == 0
}

func displayName(name string) string {
	if name == "-" {
		return "standard input"
	}
	return name
}

// unwrapPath drops the path from an fs error: the caller says it once.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
