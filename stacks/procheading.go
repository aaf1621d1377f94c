package stacks

import (
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// A person pasting the dumps of several processes names each above its
// dump: "* subprocess 91605 backtrace:", "PID 4711:", "## child process
// 12 stack". Such a heading begins that process (split.go cuts there and
// gives the piece its pid); no tool prints one, so it is never a frame.

// headingWords are the words that open a heading, longest first; the
// first three name a child.
var headingWords = []string{"child process", "parent process", "subprocess", "process", "child", "parent", "pid"}

// headingRestRE is what follows the word: the pid, perhaps a name in
// parentheses, perhaps what the dump is ("backtrace", "stack").
var headingRestRE = lazyre.New(`(?i)^\s*(?:id\s*)?[:=#]?\s*(\d{1,9})(?:\s+\([^()]{0,80}\))?\s*(?:'s\s+)?((?:back ?trace|stack(?: ?trace)?|traceback|bt|py-bt|dump|threads?)s?)?$`)

// processHeading reads a heading line (trimmed) and says the pid it
// names. A heading ends with a colon or names a dump: "Process 4711:
// python3 x.py" is py-spy's own header, "Process 4711 stopped" lldb's.
func processHeading(t string) (int, bool) {
	pid, _, ok := readHeading(t)
	return pid, ok
}

// setHeading gives a process the heading above its dump, and the pid it
// names when the dump named none.
func (p *Process) setHeading(h string) {
	pid, _, ok := readHeading(h)
	if !ok {
		return
	}
	p.Heading = h
	if p.Pid == 0 {
		p.Pid = pid
	}
}

// HeadedChild says whether the paste's heading names the process a
// child ("subprocess 91605", "child process 12"): a paste gives no
// lineage, but the reporter knew which processes were children.
func (p *Process) HeadedChild() bool {
	_, word, ok := readHeading(p.Heading)
	return ok && (word == "child process" || word == "subprocess" || word == "child")
}

// readHeading reads a heading: the pid and the word before it.
func readHeading(t string) (int, string, bool) {
	if len(t) < 5 || len(t) > 120 {
		return 0, "", false
	}
	if c := t[0]; c != '*' && c != '-' && c != '+' && c != '#' {
		if c |= 0x20; c != 'p' && c != 's' && c != 'c' {
			return 0, "", false // most lines end here
		}
	}
	s := t
	if s[0] == '#' {
		if s = strings.TrimLeft(s, "#"); s != "" && isDigit(s[0]) {
			return 0, "", false // a gdb frame ("#3  0x…"), no heading: every word of one begins with a letter
		}
	} else if (s[0] == '*' || s[0] == '-' || s[0] == '+') && len(s) > 1 && s[1] == ' ' {
		s = s[2:] // a Markdown bullet
	}
	s = strings.Trim(strings.TrimSpace(s), "*_") // bold
	colon := strings.HasSuffix(s, ":")
	s = strings.TrimSpace(strings.TrimRight(s, ":*_ "))
	word := ""
	for _, w := range headingWords {
		if len(s) > len(w) && strings.EqualFold(s[:len(w)], w) {
			word = w
			break
		}
	}
	if word == "" {
		return 0, "", false
	}
	rest := s[len(word):]
	if c := rest[0]; c != ' ' && c != ':' && c != '=' && c != '#' {
		return 0, "", false // "processing", "pids"
	}
	m := headingRestRE.FindStringSubmatch(rest)
	if m == nil || !colon && m[2] == "" {
		return 0, "", false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	return pid, word, true
}
