package stacks

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// A person's call chain of one numbered thread, outermost call first,
// in words: "thread 8 -> malloc locks pageheap_lock -> GetStackTrace ->"
// over "__GI___dl_iterate_phdr locks dl_load_write_lock in glibc"
// (gperftools#1159). Each step is a function and, after it, what the
// person says it does; the chain may go on over the next lines. It is
// read as that thread's frames, innermost first, under the person's
// thread number; the words are left out, and said so.

const (
	// chainHeader is what the thread header of a hand-written chain
	// holds where gdb's holds the thread's id; numberedChainHeader, of
	// a chain that names its thread by number ("thread 8 -> …").
	chainHeader         = "hand-written chain"
	numberedChainHeader = "hand-written chain of the paste's thread"
)

var (
	threadChainRE = lazyre.New(`^[Tt]hread (\d{1,6})\s*(?:->|→)\s*(\S.*)$`)
	chainStepRE   = lazyre.New(`^([A-Za-z_][\w:.~$]*)(?:\(\))?(?:\s+(\S.*))?$`)
	fwdArrowRE    = lazyre.New(`\s*(?:->|→)\s*`)
)

// maxChainLines bounds the lines one numbered chain may span.
const maxChainLines = 4

// threadChain reads a numbered thread's chain starting at line l, with
// the lines it goes on over; false (nothing consumed) when l is none.
func (rp *repairer) threadChain(l repLine) bool {
	m := threadChainRE.FindStringSubmatch(strings.TrimSpace(l.text))
	if m == nil {
		return false
	}
	text := m[2]
	var taken []repLine
	for len(taken) < maxChainLines-1 {
		next, ok := rp.peek()
		if !ok {
			break
		}
		nt := strings.TrimSpace(next.text)
		if nt == "" || threadChainRE.MatchString(nt) || !strings.HasSuffix(text, "->") && !fwdArrowRE.MatchString(nt) {
			break
		}
		rp.ahead = rp.ahead[1:]
		taken = append(taken, next)
		text += " " + nt
	}
	var funcs []string
	words := false
	for _, part := range fwdArrowRE.Split(text, -1) {
		if part == "" {
			continue
		}
		s := chainStepRE.FindStringSubmatch(part)
		if s == nil {
			rp.ahead = append(taken, rp.ahead...) // not a chain: the lines are the next ones again
			return false
		}
		funcs = append(funcs, s[1])
		words = words || s[2] != ""
	}
	if len(funcs) < 2 {
		rp.ahead = append(taken, rp.ahead...)
		return false
	}
	rp.out = append(rp.out, repLine{no: l.no, text: fmt.Sprintf("Thread %s (%s):", m[1], numberedChainHeader)})
	for i := range funcs {
		rp.out = append(rp.out, repLine{no: l.no, text: fmt.Sprintf("#%d  %s ()", i, funcs[len(funcs)-1-i])})
	}
	rp.fixed(l.no, "a hand-written call chain read as a thread, innermost call first")
	if words {
		rp.fixed(l.no, "a person's words in a call chain ('malloc locks pageheap_lock') left out: the frames keep the functions")
	}
	return true
}
