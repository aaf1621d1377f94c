package main

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeCommands: every hangdoc command line in the README's examples
// names a real command with flags that parse, so the snippets people copy
// into CI configs work. (The usage synopsis, with its [OPTIONAL] parts, is
// left out.)
func TestReadmeCommands(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	inFence := false
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		at := strings.Index(line, "hangdoc ")
		if !inFence || at < 0 || strings.Contains(line, "[") {
			continue
		}
		args := commandWords(line[at+len("hangdoc "):])
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			continue
		}
		root := newRootCmd(&ioStreams{out: &strings.Builder{}, errOut: &strings.Builder{}})
		c, rest, err := root.Find(args)
		if err != nil || c == root {
			t.Errorf("README line %d: %q: no such command (%v)", i+1, line, err)
			continue
		}
		if err := c.ParseFlags(rest); err != nil {
			t.Errorf("README line %d: %q: %v", i+1, line, err)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d README commands checked: the examples moved?", checked)
	}
}

// commandWords splits a snippet's hangdoc command up to where the shell
// takes over again: a comment, a redirection, a pipe, a substitution, or
// the end of a quoted script.
func commandWords(s string) []string {
	var out []string
	for _, w := range strings.Fields(s) {
		if strings.HasPrefix(w, "#") || strings.HasPrefix(w, ">") || w == "|" || strings.HasPrefix(w, "$(") {
			break
		}
		w = strings.TrimRight(w, "'")
		out = append(out, w)
		if w == "--" {
			break
		}
	}
	return out
}
