package stacks

import "strings"

// Joining a gdb frame that a paste broke onto lines of its own and
// flush left: a mail client's wrap, or a quoted e-mail that lost gdb's
// indentation. gdb's own wrap indents the continuation, which the gdb
// reader joins (joinWrapped); a flush-left continuation is joined here,
// before detection reads the lines, only where the frame cannot end
// where its line does: "#7 0x00007ffff7df049b" over "in _dl_close_worker
// (…)", an argument list still open, a trailer's "at" over its
// FILE:LINE, or a frame number alone that GitHub's autolink took the
// rest of the line from ("#5 <https://…/issues/5>" over the frame).

// maxFlushJoins bounds the lines joined to one frame.
const maxFlushJoins = 8

// frameNeedsMore says whether a frame line whose text after "#N" is
// body evidently continues on the next line.
func frameNeedsMore(body string) bool {
	b := strings.TrimSpace(body)
	switch {
	case b == "":
		return true // "#5" whose text a link wrapped away
	case strings.HasPrefix(b, "0x") && strings.IndexByte(b, ' ') < 0 && len(b) > 2:
		return true // "0x00007ffff7df049b", then "in f (…)"
	case parenDepth(b) > 0:
		return true
	case strings.HasSuffix(b, ") at") || strings.HasSuffix(b, ") from"):
		return true
	}
	return false
}

// joinFlush joins to the gdb frame line l the flush-left lines it was
// broken onto; linked says an autolink was taken off l, which may have
// left the frame number alone.
func (rp *repairer) joinFlush(l repLine, linked bool) repLine {
	t := strings.TrimSpace(l.text)
	num, ok := frameNumber(t)
	if !ok && len(t) >= 2 && t[0] == '#' && digitsEnd(t, 1) == len(t) {
		num, ok = t[1:], true // "#5" alone
	}
	if !ok {
		return l
	}
	body := t[1+len(num):]
	if strings.TrimSpace(body) == "" && !linked {
		return l // "#3" alone: Markdown ate "<signal handler called>"
	}
	for joins := 0; joins < maxFlushJoins; joins++ {
		// the next line first: it is most often the next frame, which
		// continues nothing, and that test is cheaper than frameNeedsMore's
		next, ok := rp.peek()
		if !ok {
			break
		}
		nt := next.text
		if nt == "" || nt[0] == ' ' || nt[0] == '\t' || nt[0] == '#' && strings.IndexByte(nt, ' ') >= 0 {
			break // (a '#' line with a blank is never the rest: flushContinues)
		}
		if !frameNeedsMore(body) || !flushContinues(body, nt) {
			break
		}
		rp.ahead = rp.ahead[1:]
		l.text = strings.TrimRight(l.text, " ") + " " + nt
		body = strings.TrimSpace(l.text)[1+len(num):]
		rp.fixed(l.no, "gdb frames broken onto lines of their own, flush left, joined")
	}
	return l
}

// flushContinues says whether the flush-left line nt can be the rest of
// the frame whose text so far is body: it begins nothing of its own.
func flushContinues(body, nt string) bool {
	b := strings.TrimSpace(body)
	switch {
	case strings.HasPrefix(b, "0x") && strings.IndexByte(b, ' ') < 0:
		return strings.HasPrefix(nt, "in ")
	case strings.HasSuffix(b, ") at"):
		return strings.IndexByte(nt, ' ') < 0 && strings.IndexByte(nt, ':') > 0
	case strings.HasSuffix(b, ") from"):
		return strings.IndexByte(nt, ' ') < 0
	}
	if nt[0] == '#' || wrapStartRE.MatchString(nt) && nt[0] != '"' {
		return false
	}
	return !beginsOwn(nt, "") // a frame cut at the paste's end, then the next dump
}
