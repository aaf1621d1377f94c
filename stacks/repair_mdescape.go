package stacks

import "strings"

// A paste imported into a tracker by a tool that escaped its Markdown
// (perlbug's RT import, some mail-to-issue bridges) carries a backslash
// before every punctuation mark Markdown knows — "\#0  \_\_lll\_lock\_wait
// \(\) at lowlevellock\.S:95" — and &nbsp; and &#8203; (a zero-width
// space) between words. The repair takes them off, but only on a line
// that shows two such escapes, or once the input showed it is escaped:
// a C string argument's "\n" or a Windows path's "C:\x" stay.

// mdEscapable are the marks such an importer escapes; never a quote or
// a backslash, which a dump's own strings escape.
const mdEscapable = "()[]{}_#.*-+:,!<>|~=`"

// mdUnescape removes a Markdown importer's backslashes from s.
func (rp *repairer) mdUnescape(no int, s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	n := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '\\' && strings.IndexByte(mdEscapable, s[i+1]) >= 0 {
			n++
			i++
		}
	}
	const note = "a Markdown importer's backslashes before punctuation (\\( \\_ \\#) removed"
	if n == 0 || n < 2 && rp.fixes[note] == nil {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(mdEscapable, s[i+1]) >= 0 {
			continue
		}
		b.WriteByte(s[i])
	}
	rp.fixed(no, note)
	return b.String()
}
