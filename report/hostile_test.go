package report_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/stacks"
)

// Hostile strings, as a target or a pasted dump can carry them: terminal
// escapes (OSC 52 writes the clipboard, CSI 2J clears the screen), HTML,
// Markdown that would format or link, a code fence, a table, Mermaid's
// arrow and quotes, DOT's escapes, a C1 CSI, a bidi override, invalid UTF-8.
var hostile = []string{
	"\x1b]52;c;ZXZpbA==\a",
	"\x1b[2J\x1b[31mred",
	"<script>alert(1)</script>",
	"<img src=x onerror=alert(1)>",
	"**bold** _em_ ~~gone~~",
	"```",
	"````\n```html\n<b>x</b>",
	"| table | row |",
	"[link](javascript:alert(1))",
	"![img](https://evil.example/x.png)",
	"a --> b; c[\"x\"] %% comment",
	`"quotes" 'single' \N \G \l \`,
	"&lt;script&gt; &#60;b&#62;",
	"# heading",
	"- item",
	"1. item",
	"\u009b2J \u202eevil",
	"bad\xff\xfeutf8",
	"line\nbreak\rreturn",
}

// hostileSnapshot is a process whose every string is hostile: an ABBA
// cycle between threads with hostile names, on mutexes with hostile
// symbols, in frames with hostile functions, modules and files, with
// hostile notes.
func hostileSnapshot() *stacks.Snapshot {
	h := func(i int) string { return hostile[i%len(hostile)] }
	all := strings.Join(hostile, " ")
	frames := func(seed int) []stacks.Frame {
		var fs []stacks.Frame
		fs = append(fs, stacks.Frame{Func: "__lll_lock_wait", Module: "/lib/x86_64-linux-gnu/libc.so.6", Offset: 0x8a0e, PC: 0x7f0000008a0e})
		fs = append(fs, stacks.Frame{Func: "pthread_mutex_lock", Module: "/lib/x86_64-linux-gnu/libc.so.6", Offset: 0x91e0, PC: 0x7f00000091e0})
		for i := range hostile {
			fs = append(fs, stacks.Frame{
				Func:   h(seed + i),
				Module: "/opt/" + h(seed+i+1) + "/lib" + h(seed+i+2) + ".so",
				Offset: uint64(0x1000 + i),
				PC:     uint64(0x5500000 + i),
				File:   "/src/" + h(seed+i+3) + ".c",
				Line:   i + 1,
				Args:   []stacks.Arg{{Name: h(seed + i + 4), Value: h(seed + i + 5)}},
			})
		}
		fs = append(fs, stacks.Frame{Func: strings.Repeat("`", 12) + " fence " + strings.Repeat("~", 5), Module: "/x"})
		return fs
	}
	wait := func(addr uint64, owner int, sym string) *stacks.Wait {
		return &stacks.Wait{Syscall: "futex", Nr: 202, Addr: addr, Op: "FUTEX_WAIT_PRIVATE",
			Mutex: &stacks.Mutex{Addr: addr, Lock: 2, Owner: owner, Symbol: sym}}
	}
	proc := &stacks.Process{
		Pid: 4000, PPid: 1, Exe: "/opt/" + h(2) + "/evil" + h(1),
		Cmdline: []string{"./evil", h(4), h(5), h(7), h(8), h(0)},
		State:   "S",
		Label:   h(10),
		Notes:   []string{"pasted: " + all},
		Threads: []*stacks.Thread{
			{Tid: 4001, Name: h(0), State: "S", Stack: frames(0), Wait: wait(0x1000, 4002, "lock_"+h(2)), Notes: []string{h(3) + h(1)}},
			{Tid: 4002, Name: h(2), State: "S", Stack: frames(3), Wait: wait(0x2000, 4001, h(10)+h(11))},
			{Tid: 4003, Name: h(4) + h(17), State: "S", Stack: []stacks.Frame{{Func: h(5), File: h(6), Line: 1}, {Func: h(9), Signal: true}}},
			{Tid: 4004, Name: h(7), State: "S", Stack: []stacks.Frame{{Func: h(5), File: h(6), Line: 1}, {Func: h(9), Signal: true}}},
			{Tid: 4005, Name: h(18), State: "R", CPU: 99, Stack: nil},
		},
	}
	return &stacks.Snapshot{
		Schema: stacks.Schema, Source: "attach", Samples: 1,
		Evidence:  stacks.Evidence{Owners: true, Syscalls: true, CPU: true},
		Processes: []*stacks.Process{proc},
	}
}

// hostileDiagnosis carries hostile strings in every field a rule file or
// a summary built from the target can fill.
func hostileDiagnosis() heuristics.Diagnosis {
	all := strings.Join(hostile, " ")
	return heuristics.Diagnosis{
		ID: "lost-wakeup", Title: "title " + all, Confidence: heuristics.Low,
		Pids: []int{4000}, Tids: []int{4003},
		Summary:  "summary " + all,
		Chain:    hostile,
		Evidence: hostile,
		Fix:      "fix " + all,
		Refs:     []string{"javascript:alert(1)", "https://example.com/a b)(<x>`|*", "data:text/html,<script>alert(1)</script>", "pthread_atfork(3)"},
		KnownIssue: &heuristics.KnownIssue{
			ID: "x`y", Title: "known " + all, Fix: "kfix " + all, Explain: "explain " + all,
			Links: []string{"javascript:alert(1)", "https://example.com/ok?a=1&b=2", "https://evil.example/\">x</a><script>"},
		},
		Deadlock: true,
	}
}

func TestHostileStrings(t *testing.T) {
	snap := hostileSnapshot()
	res := heuristics.Diagnose(snap, heuristics.Options{})
	diags := res.Diagnoses
	if len(diags) == 0 || diags[0].ID != "lock-order-cycle" {
		t.Fatalf("the hostile ABBA is not diagnosed as a lock-order-cycle: %+v", diags)
	}
	// the heuristics quote the hostile names in their summaries
	if !strings.Contains(diags[0].Summary, "<script>") {
		t.Fatalf("the cycle's summary does not carry the hostile names: %q", diags[0].Summary)
	}
	diags = append(diags, hostileDiagnosis())
	res.Diagnoses = diags

	render := func(f func(*bytes.Buffer) error) string {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}

	t.Run("text", func(t *testing.T) {
		for _, opt := range []report.TextOptions{{}, {Width: 40}} {
			out := render(func(b *bytes.Buffer) error { return report.Text(b, res, opt) })
			checkNoControl(t, "text", out)
			if !strings.Contains(out, `\x1b]52;c;ZXZpbA==\x07`) {
				t.Errorf("text: the OSC 52 name is not shown as visible escapes")
			}
		}
		// With color, the only escapes are the report's own SGR colors.
		out := render(func(b *bytes.Buffer) error {
			return report.Text(b, res, report.TextOptions{Color: true, Width: 50})
		})
		plain := sgr.ReplaceAllString(out, "")
		checkNoControl(t, "text (color, SGR removed)", plain)
	})

	t.Run("markdown", func(t *testing.T) {
		md := render(func(b *bytes.Buffer) error {
			return report.Markdown(b, res, report.MarkdownOptions{Version: "v1 <b>", CommandLine: "hangdoc analyze '" + strings.Join(hostile, "' '") + "'"})
		})
		checkMarkdown(t, md, snap)
		blocks, outside := scanMarkdown(t, md)
		for i, l := range outside {
			outside[i] = stripCodeSpans(l)
		}
		text := strings.Join(outside, "\n")
		for _, bad := range []string{"<script", "<img", "**bold**", "~~gone~~", "| table |", "[link](", "![img]", "&lt;script&gt; &#60;b", "\n# heading", "\n- - item", "\n- 1. item", "\n- # heading"} {
			if strings.Contains(text, bad) {
				t.Errorf("markdown: %q reaches the Markdown unescaped", bad)
			}
		}
		// "_" stays as it is in the HTML of a <summary> line only.
		for _, l := range outside {
			if strings.Contains(l, "_em_") && !strings.HasPrefix(l, "<details><summary>") {
				t.Errorf("markdown: %q reaches the Markdown unescaped: %q", "_em_", l)
			}
		}
		// The hostile text is still there to read, escaped.
		for _, good := range []string{`\*\*bold\*\*`, `&lt;script&gt;alert(1)&lt;/script&gt;`, `\[link\](javascript:alert(1))`, `&amp;lt;script&amp;gt;`} {
			if !strings.Contains(text, good) {
				t.Errorf("markdown: the escaped form %q is missing", good)
			}
		}
		// Links are ours, to http(s) only.
		if !strings.Contains(text, "[https://example.com/ok?a=1&amp;b=2](https://example.com/ok?a=1&b=2)") {
			t.Errorf("markdown: the known issue's http link is not a link")
		}
		if !strings.Contains(text, "(https://evil.example/%22%3Ex%3C/a%3E%3Cscript%3E)") {
			t.Errorf("markdown: a link target with HTML in it is not percent-encoded")
		}
		// Code blocks hold the frames, whole: the hostile fence inside
		// did not end its block.
		var frames int
		for _, b := range blocks {
			for _, l := range b.lines {
				if strings.Contains(l, "```````````` fence") {
					frames++
				}
			}
		}
		if frames != 2 {
			t.Errorf("markdown: the frame with a run of 12 backticks is in %d code blocks, want 2 (one per group that has it)", frames)
		}
	})

	t.Run("mermaid", func(t *testing.T) {
		out := render(func(b *bytes.Buffer) error { return report.Mermaid(b, res) })
		checkMermaid(t, out)
		if strings.Count(out, "-->") != strings.Count(out, "-->|") {
			t.Errorf("mermaid: an arrow that is not an edge:\n%s", out)
		}
	})

	t.Run("dot", func(t *testing.T) {
		out := render(func(b *bytes.Buffer) error { return report.Dot(b, res) })
		checkDot(t, out)
		if !strings.Contains(out, "color=red") {
			t.Errorf("dot: the cycle is not red:\n%s", out)
		}
	})

	t.Run("json", func(t *testing.T) {
		out := render(func(b *bytes.Buffer) error { return report.JSON(b, res) })
		if !json.Valid([]byte(out)) {
			t.Fatalf("json: not valid")
		}
		// encoding/json escapes C0 controls and <, >, &; C1 controls
		// (U+009B) and bidi overrides it writes as they are.
		if strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, "<script") {
			t.Errorf("json: a raw escape or tag in the output")
		}
		var doc report.Document
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		// JSON keeps the strings as read (machines escape for themselves),
		// invalid UTF-8 aside.
		got := doc.Processes[0].Threads
		if got[0].Name != hostile[0] || got[1].Name != hostile[2] {
			t.Errorf("json: names changed: %q, %q", got[0].Name, got[1].Name)
		}
		if !strings.Contains(got[4].Name, "\uFFFD") && got[4].Name != hostile[18] {
			t.Errorf("json: name %q", got[4].Name)
		}
	})
}

// TestMarkdownEscapes pins the escaping functions' output on small cases
// through the report.
func TestMarkdownEscapes(t *testing.T) {
	snap := &stacks.Snapshot{Schema: stacks.Schema, Samples: 1, Processes: []*stacks.Process{{
		Pid: 1, Exe: "/bin/x",
		Threads: []*stacks.Thread{{Tid: 2, Name: "a`b", State: "S", Stack: []stacks.Frame{{Func: "f```g"}}}},
	}}}
	diags := []heuristics.Diagnosis{{ID: "sleeping", Confidence: "high", Summary: "- 1. <b>x</b> *y* a_b [c](d) | e ~f~ #3 \\",
		Chain: []string{"thread 2 `a`b` waits for `x<y>` ``", "12) `lock_b` held"}}}
	var b bytes.Buffer
	if err := report.Markdown(&b, &heuristics.Result{Snap: snap, Diagnoses: diags}, report.MarkdownOptions{Version: "v1", CommandLine: "hangdoc `x` ``y"}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"**sleeping** (high confidence): \\- 1. &lt;b&gt;x&lt;/b&gt; \\*y\\* a\\_b \\[c\\](d) \\| e \\~f\\~ \\#3 \\\\\n",
		"<details><summary>1 thread: 2 a&#96;b — S</summary>\n\n````\n  #0  f```g\n````\n\n</details>\n",
		"Reported by hangdoc v1 with ```hangdoc `x` ``y```\n",
		// backtick pairs are code spans, an unpaired one text
		"- thread 2 `a`b` waits for `x&lt;y&gt;` `\\`\n",
		"- 12\\) `lock_b` held\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
