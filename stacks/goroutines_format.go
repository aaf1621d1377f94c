package stacks

import (
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

var (
	goHeaderRE    = lazyre.New(`goroutine \d+ (?:gp=0x[0-9a-f]+ m=(?:\d+|nil) (?:mp=0x[0-9a-f]+ )?)?\[[^\]\n]{1,200}\]:`)
	goCreatedByRE = lazyre.New(`(?m)^[ \t>]*created by \S`)
	goLocationRE  = lazyre.New(`\.(?:go|s):\d+ \+0x[0-9a-f]+`)
)

func init() {
	registerFormat(&Format{
		Name: "goroutines",
		Sniff: func(head []byte) int {
			return 3*len(goHeaderRE.FindAllIndex(head, 20)) + len(goCreatedByRE.FindAllIndex(head, 20)) +
				len(goLocationRE.FindAllIndex(head, 40))
		},
		Parse:  ParseGoroutines,
		Begins: beginsGoroutines,
	})
}

// beginsGoroutines: what Go's runtime prints above its goroutines, so a
// dump pasted after another keeps its first lines (a timed-out test's
// "running tests:" list is no frame of the dump before it).
func beginsGoroutines(t, next string) bool {
	switch t[0] {
	case 'S':
		return t == "SIGQUIT: quit" && strings.HasPrefix(next, "PC=0x")
	case 'p':
		return strings.HasPrefix(t, "panic: ") && (strings.HasPrefix(t, "panic: test timed out after ") ||
			strings.HasPrefix(next, "[signal SIG") || beginGoroutineRE.MatchString(next))
	case 'f':
		return t == "fatal error: all goroutines are asleep - deadlock!"
	}
	return false
}
