package report

import (
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// MarkdownOptions say who made the report and how, for its last line.
type MarkdownOptions struct {
	Version     string // hangdoc's version
	CommandLine string // the command line that produced the report, as typed
	// MaxBytes caps the report's size: 0 is GitHubCommentLimit, a
	// negative value no cap.
	MaxBytes int
	// FullReport says where the whole report is when this one is cut
	// (a file `hangdoc run --report` wrote); empty: how to get it.
	FullReport string
}

// Markdown writes the report for a bug tracker (GitHub, GitLab; Jira's
// Markdown paste): the verdict in one line, the chain as a list, the fix,
// the known issue, the evidence; the wait-for graph as a ```mermaid block;
// each group of identical stacks folded in <details>; the notes; and the
// hangdoc version and command line at the end.
//
// Every string from the target or a dump is untrusted. It is sanitised of
// control characters (Sanitize), then escaped for where it lands: Markdown
// text (mdText: HTML's <, > and & as entities, Markdown's punctuation
// with a backslash; mdProse keeps a diagnosis's `quoted` names as code
// spans), HTML (the <summary> line: htmlText), code
// spans and fences (delimited by a backtick run longer than any in the
// content), Mermaid labels (mermaidEscape) and link targets (http and
// https only, percent-encoded).
//
// res is what heuristics.Diagnose found: its wait-for graph is the one
// drawn.
func Markdown(w io.Writer, res *heuristics.Result, opt MarkdownOptions) error {
	limit := opt.MaxBytes
	if limit == 0 {
		limit = GitHubCommentLimit
	}
	var b strings.Builder
	for i, lvl := range markdownLevels {
		b.Reset()
		ew := &errWriter{w: &b}
		writeMarkdown(ew, res, opt, lvl)
		if ew.err != nil {
			return ew.err
		}
		if limit < 0 || b.Len() <= limit {
			break
		}
		if i == len(markdownLevels)-1 {
			// Even one line per stack group is too long: keep whole lines
			// up to the limit, then say so (a fence left open at the cut
			// is closed by the reader's renderer at the end of the text).
			text := b.String()
			foot := cutFooter(opt)
			cut := strings.LastIndexByte(text[:max(0, limit-len(foot)-1)], '\n') + 1
			b.Reset()
			b.WriteString(text[:cut])
			b.WriteString(foot)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// GitHubCommentLimit is the most characters a GitHub issue comment (and a
// step summary's part) takes: markdown reports are cut to it by default.
const GitHubCommentLimit = 65536

// markdownLevel says how much of a report is written: the first level
// that fits the limit is used, so a small report is whole and a report of
// thousands of threads keeps its verdict, chain, fix and every distinct
// stack group, with the long parts shortened.
type markdownLevel struct {
	listMax    int  // chain and evidence lines per diagnosis (0: all)
	graph      bool // the mermaid wait-for graph
	frames     int  // frames shown per stack group (0: all)
	notes      bool // per-thread notes inside the stack groups
	groupLines bool // each stack group as one line (no frames)
}

var markdownLevels = []markdownLevel{
	{listMax: 25, graph: true, notes: true},
	{listMax: 25, notes: true},
	{listMax: 12, frames: 24},
	{listMax: 8, frames: 8},
	{listMax: 5, groupLines: true},
}

func (l markdownLevel) shortened() bool { return l != markdownLevels[0] }

func cutFooter(opt MarkdownOptions) string {
	return fmt.Sprintf("\n---\n\nCut to %d characters (a GitHub comment's limit). %s\n", GitHubCommentLimit, fullReportHint(opt))
}

// fullReportHint says where the whole report is.
func fullReportHint(opt MarkdownOptions) string {
	if opt.FullReport != "" {
		return "The full report: " + mdText(opt.FullReport) + "."
	}
	return "The full report: the same command with `--format json`, or `--format text`."
}

func writeMarkdown(ew *errWriter, res *heuristics.Result, opt MarkdownOptions, lvl markdownLevel) {
	snap, diags := res.Snap, res.Diagnoses
	if len(diags) == 0 {
		ew.printf("**no verdict**: hangdoc names nothing here; the stacks are below.\n\n")
	}
	for i, d := range diags {
		if i == 1 {
			ew.printf("### Also found\n\n")
		}
		writeMarkdownDiagnosis(ew, d, lvl.listMax)
	}

	if wg := buildWaitGraph(res); len(wg.edges) > 0 {
		if lvl.graph {
			ew.printf("### Wait-for graph\n\n")
			var b strings.Builder
			writeMermaid(&errWriter{w: &b}, wg)
			fence := codeFence(b.String())
			ew.printf("%smermaid\n%s%s\n\n", fence, b.String(), fence)
		} else {
			ew.printf("### Wait-for graph\n\n%s edges: left out to keep the report short (`--format dot` draws it).\n\n", plural(len(wg.edges), "wait-for"))
		}
	}

	if snap != nil && len(snap.Processes) > 0 {
		ew.printf("### Stacks\n\n")
		for _, p := range snap.Processes {
			writeMarkdownProcess(ew, snap, p, lvl)
		}
	}

	ew.printf("---\n\n")
	if lvl.shortened() {
		ew.printf("Shortened to fit a GitHub comment (%d characters). %s\n\n", GitHubCommentLimit, fullReportHint(opt))
	}
	version := opt.Version
	if version == "" {
		version = "(unknown version)"
	}
	ew.printf("Reported by hangdoc %s", mdText(version))
	if opt.CommandLine != "" {
		ew.printf(" with %s", codeSpan(opt.CommandLine))
	}
	ew.printf("\n")
}

// writeCapped writes items as a list, at most max of them (0: all), and
// one line for the rest.
func writeCapped(ew *errWriter, items []string, max int) {
	for i, it := range items {
		if max > 0 && i == max {
			ew.printf("- … and %d more\n", len(items)-max)
			break
		}
		ew.printf("- %s\n", mdProse(it))
	}
}

func writeMarkdownDiagnosis(ew *errWriter, d heuristics.Diagnosis, listMax int) {
	ew.printf("**%s** (%s confidence): %s\n\n", mdText(d.ID), mdText(d.Confidence), mdProse(d.Summary))
	writeCapped(ew, d.Chain, listMax)
	if len(d.Chain) > 0 {
		ew.printf("\n")
	}
	if d.Fix != "" {
		ew.printf("**Fix:** %s\n\n", mdProse(d.Fix))
	}
	if k := d.KnownIssue; k != nil {
		ew.printf("**Known issue:** %s", mdProse(k.Title))
		if k.ID != "" {
			ew.printf(" (%s)", codeSpan(k.ID))
		}
		ew.printf("\n\n")
		if k.Explain != "" {
			ew.printf("%s\n\n", mdProse(k.Explain))
		}
		for _, l := range k.Links {
			ew.printf("- %s\n", mdLink(l))
		}
		if len(k.Links) > 0 {
			ew.printf("\n")
		}
	}
	if len(d.Evidence) > 0 {
		ew.printf("**Evidence:**\n\n")
		writeCapped(ew, d.Evidence, listMax)
		ew.printf("\n")
	}
	for _, h := range d.Hints {
		ew.printf("**Next:** %s.\n\n", mdProse(hintText(h)))
	}
	if len(d.Refs) > 0 {
		ew.printf("**See:**\n\n")
		for _, r := range d.Refs {
			ew.printf("- %s\n", mdLink(r))
		}
		ew.printf("\n")
	}
}

func writeMarkdownProcess(ew *errWriter, snap *stacks.Snapshot, proc *stacks.Process, lvl markdownLevel) {
	h := headOf(snap, proc)
	ew.printf("#### Process %d", proc.Pid)
	if h.cmd != "" {
		ew.printf(": %s", codeSpan(h.cmd))
	}
	ew.printf("\n\n")
	groups := h.groups
	ew.printf("%s", h.summary)
	if proc.Fork != nil {
		ew.printf(" · forked from %d without exec", proc.Fork.ParentPid)
	}
	if proc.Label != "" {
		ew.printf(" · %s", mdText(proc.Label))
	}
	ew.printf("\n\n")
	for _, g := range groups {
		writeMarkdownGroup(ew, g, lvl)
	}
	if len(proc.OSThreads) > 0 {
		osGroups := stacks.GroupThreads(proc.OSThreads)
		ew.printf("The program's %s in %s:\n\n", plural(len(proc.OSThreads), "OS thread"), plural(len(osGroups), "group"))
		for _, g := range osGroups {
			writeMarkdownGroup(ew, g, lvl)
		}
	}
	if len(proc.Notes) > 0 {
		ew.printf("**Notes:**\n\n")
		for _, n := range proc.Notes {
			ew.printf("- %s\n", mdProse(n))
		}
		ew.printf("\n")
	}
}

// writeMarkdownGroup folds a group of identical stacks:
// "<details><summary>2 threads: 4711 worker, 4712 worker — S, futex …</summary>"
// over the frames in a code block. The summary line is HTML (GitHub reads
// no Markdown there): it is escaped with character references (htmlText).
func writeMarkdownGroup(ew *errWriter, g stacks.Group, lvl markdownLevel) {
	t0 := g.Threads[0]
	names := make([]string, 0, min(len(g.Threads), 9))
	for i, t := range g.Threads {
		if i == 8 {
			names = append(names, fmt.Sprintf("… (+%d)", len(g.Threads)-8))
			break
		}
		names = append(names, memberName(t))
	}
	state := t0.State
	if wt := waitText(t0); wt != "" {
		state += ", " + wt
	}
	summary := fmt.Sprintf("%s: %s — %s", plural(len(g.Threads), unit(g.Threads)), strings.Join(names, ", "), state)
	if lvl.groupLines {
		top := "(no stack)"
		if len(g.Stack) > 0 {
			top = frameLine(0, g.Stack[0]).String()
		}
		ew.printf("- %s: %s\n", mdText(summary), codeSpan(top))
		return
	}
	ew.printf("<details><summary>%s</summary>\n\n", htmlText(summary))
	var b strings.Builder
	for i, f := range g.Stack {
		if lvl.frames > 0 && i == lvl.frames {
			fmt.Fprintf(&b, "… %d more frames\n", len(g.Stack)-i)
			break
		}
		b.WriteString(frameLine(i, f).String())
		b.WriteByte('\n')
	}
	if len(g.Stack) == 0 {
		b.WriteString("(no stack)\n")
	}
	if c := createdBy(t0); c != "" {
		b.WriteString(c + "\n")
	}
	code := b.String()
	fence := codeFence(code)
	ew.printf("%s\n%s%s\n\n", fence, code, fence)
	if lvl.notes {
		for _, t := range g.Threads {
			for _, n := range t.Notes {
				ew.printf("- thread %d: %s\n", t.Tid, mdProse(n))
			}
		}
		for _, t := range g.Threads {
			if len(t.Notes) > 0 {
				ew.printf("\n")
				break
			}
		}
	}
	ew.printf("</details>\n\n")
}

// mdText escapes an untrusted string for Markdown text (a paragraph, a
// list item, bold): sanitised first, then "<", ">" and "&" become HTML
// entities (no tag, and no entity of the target's making, survives), and
// the characters Markdown gives a meaning inline — emphasis, code, links,
// tables, strikethrough, escapes, "#" references — get a backslash. It
// cannot start a block either: Sanitize leaves no newline, leading spaces
// (an indented code block) are dropped, and a leading list or heading
// marker ("-", "+", "=", "1.") is escaped.
func mdText(s string) string {
	return escapeInline(strings.TrimLeft(Sanitize(s), " "), true)
}

// mdProse renders the prose of a diagnosis, which quotes names and
// symbols in backticks ("thread 4711 `worker` waits for mutex
// `server_lock`"): each pair of backticks becomes a code span (codeSpan),
// the text between them Markdown text (escapeInline); line breaks in the
// prose become spaces, as Markdown would read them. The names are
// untrusted, and a backtick in one only shifts which pieces are code:
// every piece is escaped for what it becomes, so nothing breaks out.
func mdProse(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", " ")
	parts := strings.Split(strings.TrimLeft(Sanitize(s), " "), "`")
	if len(parts)%2 == 0 { // an odd number of backticks: the last one is text
		n := len(parts)
		parts[n-2] += "`" + parts[n-1]
		parts = parts[:n-1]
	}
	var b strings.Builder
	for i, p := range parts {
		switch {
		case i%2 == 0:
			b.WriteString(escapeInline(p, i == 0))
		case p == "":
			b.WriteString("\\`\\`")
		default:
			b.WriteString(codeSpan(p))
		}
	}
	return b.String()
}

// escapeInline is mdText's escaping of a sanitised string; lineStart says
// the string begins a line's text, where block markers count.
func escapeInline(s string, lineStart bool) string {
	var b strings.Builder
	digits := lineStart // still in a leading run of digits: "1." starts a list
	for i, r := range s {
		lead := lineStart && i == 0
		switch {
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case strings.ContainsRune("\\`*_[]|~#", r),
			lead && strings.ContainsRune("-+=", r),
			digits && i > 0 && (r == '.' || r == ')'):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
		digits = digits && r >= '0' && r <= '9'
	}
	return b.String()
}

// htmlText escapes an untrusted string for HTML that a tracker may or may
// not read as Markdown too (the <summary> line of <details>): HTML's
// special characters and Markdown's inline ones all become numeric
// character references, which both read as the character itself. "_" is
// left as it is, for the symbols' sake: at worst a renderer that reads
// Markdown there shows an emphasis.
func htmlText(s string) string {
	s = Sanitize(s)
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("<>&\"'`*[]|~\\#", r) {
			fmt.Fprintf(&b, "&#%d;", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// codeSpan puts an untrusted string in an inline code span: delimited by
// one backtick more than its longest run of backticks, padded with a space
// when it starts or ends with one, so no content ends the span. Inside, a
// tracker shows everything literally (no HTML, no emphasis).
func codeSpan(s string) string {
	s = Sanitize(s)
	delim := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		s = " " + s + " "
	}
	return delim + s + delim
}

// CodeSpan is codeSpan for the command layer's Markdown (a step
// summary's heading).
func CodeSpan(s string) string { return codeSpan(s) }

// codeFence is the fence for a code block holding text: three backticks,
// or one more than the longest backtick run in it, so no line of the
// content can close the block.
func codeFence(text string) string {
	return strings.Repeat("`", max(3, longestRun(text, '`')+1))
}

func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// mdLink makes a link of an http or https URL, its target percent-encoded
// so no character of it ends the link or starts HTML; anything else
// (javascript:, data:, a man page name) is shown as escaped text.
func mdLink(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !utf8.ValidString(s) {
		return mdText(s)
	}
	var target strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~:/?#@!$&'*+,;=%", c) >= 0 {
			target.WriteByte(c)
		} else {
			fmt.Fprintf(&target, "%%%02X", c)
		}
	}
	return "[" + mdText(s) + "](" + target.String() + ")"
}
