package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time by the Makefile from `git describe`:
// -ldflags "-X main.version=v1.2.0-3-gabc1234". Without it (go build, go
// install) the module and VCS build info say what was built.
var version = ""

// versionString is hangdoc's version, for `hangdoc version`, --version
// and the last line of a report: the -X version, else the module's
// version (`go install …@v1.2.0` sets it), else the VCS revision go build
// stamped, else "devel".
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return versionFrom(version, bi)
}

func versionFrom(stamped string, bi *debug.BuildInfo) string {
	if stamped != "" {
		return stamped
	}
	if bi == nil {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "devel-" + rev
}

// versionLine is what `hangdoc version` and `hangdoc --version` print.
func versionLine() string {
	return fmt.Sprintf("hangdoc %s (%s, %s/%s)\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd(ios *ioStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hangdoc's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprint(ios.out, versionLine())
			return err
		},
	}
}

// withVersionFlag gives the root command --version (-v), printing the
// same line as `hangdoc version`. Its own flag, not cobra's Version
// field: cobra prints "hangdoc version X" unless given a version
// template, and a template pulls text/template's reflective method
// calls into the binary, which keeps every exported method of every
// type linked in (a 4 MB larger binary, 1 MB more resident at start).
func withVersionFlag(root *cobra.Command) {
	show := root.Flags().BoolP("version", "v", false, "print hangdoc's version")
	root.RunE = func(c *cobra.Command, _ []string) error {
		if !*show {
			return c.Help()
		}
		_, err := fmt.Fprint(c.OutOrStdout(), versionLine())
		return err
	}
}
