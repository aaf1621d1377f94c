package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestColorEnvironment(t *testing.T) {
	for _, c := range []struct {
		env      map[string]string
		mode     string
		terminal bool
		want     bool
	}{
		{nil, "auto", true, true},
		{nil, "auto", false, false},
		{map[string]string{"NO_COLOR": "1"}, "auto", true, false},
		{map[string]string{"NO_COLOR": ""}, "auto", true, true}, // no-color.org: empty does not count
		{map[string]string{"NO_COLOR": "1"}, "always", false, true},
		{map[string]string{"CLICOLOR_FORCE": "1"}, "auto", false, true},
		{map[string]string{"CLICOLOR_FORCE": "0"}, "auto", false, false},
		{map[string]string{"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, "auto", true, false},
		{map[string]string{"CLICOLOR": "0"}, "auto", true, false},
		{map[string]string{"TERM": "dumb"}, "auto", true, false},
		{map[string]string{"TERM": "dumb", "CLICOLOR_FORCE": "1"}, "auto", true, true},
		{map[string]string{"TERM": "dumb"}, "never", true, false},
	} {
		for _, k := range []string{"NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM"} {
			if v, ok := c.env[k]; ok {
				t.Setenv(k, v)
			} else {
				t.Setenv(k, "xterm")
				if k != "TERM" {
					os.Unsetenv(k)
				}
			}
		}
		if got := colorFor(c.mode, c.terminal); got != c.want {
			t.Errorf("env %v, --color %s, terminal %v: color %v, want %v", c.env, c.mode, c.terminal, got, c.want)
		}
	}
}

// Bad flag values are a one-line usage error that says what is wanted,
// never a silent default.
func TestFlagValues(t *testing.T) {
	list := filepath.Join(t.TempDir(), "list.json")
	if err := os.WriteFile(list, []byte("[]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"attach", "--interval", "-1s", "1"}, "--interval -1s: want more than 0"},
		{[]string{"attach", "--interval", "0s", "1"}, "--interval 0s: want more than 0"},
		{[]string{"run", "--interval", "-1s", "--", "true"}, "--interval -1s: want more than 0"},
		{[]string{"analyze", "--rules", list, "x"}, `the file is a JSON array, want an object: {"rules": [...]}`},
		{[]string{"signatures", "--rules", list}, `the file is a JSON array, want an object: {"rules": [...]}`},
	} {
		_, _, _, err := runIn(c.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "Go value") {
			t.Errorf("hangdoc %s: %v; want a one-line usage error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// TestHelpExamples: attach, analyze, signatures and run show examples,
// and every example line is a command whose flags parse.
func TestHelpExamples(t *testing.T) {
	root := newRootCmd(&ioStreams{out: &strings.Builder{}, errOut: &strings.Builder{}})
	for _, name := range []string{"attach", "analyze", "signatures", "run"} {
		c, _, err := root.Find([]string{name})
		if err != nil || c.Example == "" {
			t.Errorf("%s: no examples in its help (%v)", name, err)
			continue
		}
		for _, line := range strings.Split(c.Example, "\n") {
			at := strings.Index(line, "hangdoc ")
			if at < 0 {
				continue
			}
			args := commandWords(line[at+len("hangdoc "):])
			r := newRootCmd(&ioStreams{out: &strings.Builder{}, errOut: &strings.Builder{}})
			sub, rest, err := r.Find(args)
			if err != nil || sub.Name() != name {
				t.Errorf("%s example %q: finds %v (%v)", name, line, sub.Name(), err)
				continue
			}
			if err := sub.ParseFlags(rest); err != nil {
				t.Errorf("%s example %q: %v", name, line, err)
			}
		}
	}
}

// TestAttachCompletesPids: `hangdoc attach <TAB>` offers running pids with
// their command names, and not the pids already on the line.
func TestAttachCompletesPids(t *testing.T) {
	self := strconv.Itoa(os.Getppid())
	out, _, _, err := runIn("__complete", "attach", "1", self[:1])
	if err != nil {
		t.Fatal(err)
	}
	comm, _ := os.ReadFile("/proc/" + self + "/comm")
	if want := self + "\t" + strings.TrimSpace(string(comm)); !strings.Contains(out, want+"\n") {
		t.Errorf("no %q among the completions:\n%s", want, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "1\t") {
			t.Errorf("pid 1, already typed, is offered again")
		}
		if l != "" && !strings.HasPrefix(l, self[:1]) && !strings.HasPrefix(l, ":") {
			t.Errorf("%q does not start with %q", l, self[:1])
		}
	}
}

// TestAnalyzeStdinTerminal: analyze - with a terminal on standard input
// says on stderr that it reads it, instead of waiting silently.
func TestAnalyzeStdinTerminal(t *testing.T) {
	dump, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dumps", "gdb", "mutex_o2.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tty := range []bool{true, false} {
		var out, errOut strings.Builder
		ios := &ioStreams{in: strings.NewReader(string(dump)), inIsTerminal: tty, out: &out, errOut: &errOut}
		root := newRootCmd(ios)
		root.SetArgs([]string{"analyze", "-"})
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		if said := strings.Contains(errOut.String(), "reading from stdin"); said != tty {
			t.Errorf("stdin a terminal %v: stderr %q", tty, errOut.String())
		}
	}
}
