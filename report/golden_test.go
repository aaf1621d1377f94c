package report_test

// Golden tests: the reports of real patients, diagnosed and rendered from
// snapshots that `hangdoc attach` read from them (testdata/snapshots/*.json,
// each the hangdoc/v1 document: the snapshot and the diagnoses made of
// it). The heuristics run again on each snapshot: the stored diagnoses
// must be what Diagnose gives today, and the goldens are rendered from
// those. The snapshots are fixed files, so the goldens are stable without
// normalising pids, tids or addresses. TestLiveRender runs the same
// patients today and checks that the live path still renders; with
// -capture it rewrites the snapshots, and -update rewrites the goldens
// and the snapshots' diagnoses:
//
//	go test ./report -run TestLiveRender -capture
//	go test ./report -run TestGolden -update

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/stacks"
)

var (
	update  = flag.Bool("update", false, "rewrite testdata/golden from the current renderers")
	capture = flag.Bool("capture", false, "rewrite testdata/snapshots from live patients (TestLiveRender)")
)

// goldenMarkdown is the markdown footer the goldens are rendered with.
var goldenMarkdown = report.MarkdownOptions{Version: "v0.0.0-golden", CommandLine: "hangdoc attach --format markdown 4242"}

// patients are the live patients whose snapshots the goldens render.
var patients = []struct {
	name   string // testdata/snapshots/<name>.json
	source string // testdata/patients/<source>
	child  bool   // attach to the forked child (printed as "child=<pid>") and the parent
	top    string // the top diagnosis's id
	// golang: source is a Go patient of testdata/gorun, read goroutine
	// by goroutine.
	golang bool
}{
	{"abba", "abba.c", false, "lock-order-cycle", false},
	{"openblas_relock", "openblas_relock.c", true, "self-deadlock", false},
	{"sleeper", "sleeper.c", false, "sleeping", false},
	{"go_abba", "abba", false, "lock-order-cycle", true},
}

// readDocument reads a hangdoc/v1 document: the snapshot and its diagnoses.
func readDocument(t *testing.T, path string) (*stacks.Snapshot, []heuristics.Diagnosis, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc report.Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if doc.Snapshot == nil || len(doc.Processes) == 0 {
		t.Fatalf("%s: no processes", path)
	}
	return doc.Snapshot, doc.Diagnoses, b
}

// renderings are every format of one snapshot, diagnosed now, by golden
// file suffix.
func renderings(t *testing.T, snap *stacks.Snapshot) (map[string]string, []heuristics.Diagnosis) {
	t.Helper()
	res := heuristics.Diagnose(snap, heuristics.Options{})
	out := map[string]string{}
	render := func(ext string, f func(*bytes.Buffer) error) {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		out[ext] = b.String()
	}
	render("txt", func(b *bytes.Buffer) error { return report.Text(b, res, report.TextOptions{}) })
	render("w72.txt", func(b *bytes.Buffer) error { return report.Text(b, res, report.TextOptions{Width: 72}) })
	render("md", func(b *bytes.Buffer) error { return report.Markdown(b, res, goldenMarkdown) })
	render("dot", func(b *bytes.Buffer) error { return report.Dot(b, res) })
	render("mmd", func(b *bytes.Buffer) error { return report.Mermaid(b, res) })
	render("json", func(b *bytes.Buffer) error { return report.JSON(b, res) })
	return out, res.Diagnoses
}

func TestGolden(t *testing.T) {
	for _, pt := range patients {
		t.Run(pt.name, func(t *testing.T) {
			docPath := filepath.Join("testdata", "snapshots", pt.name+".json")
			snap, _, raw := readDocument(t, docPath)
			out, diags := renderings(t, snap)
			if len(diags) == 0 || diags[0].ID != pt.top {
				t.Fatalf("Diagnose's top diagnosis of the snapshot is not %s: %v", pt.top, diags)
			}
			// JSON: the snapshot reads back into the same bytes, with the
			// diagnoses Diagnose gives today.
			if out["json"] != string(raw) {
				if *update {
					if err := os.WriteFile(docPath, []byte(out["json"]), 0o644); err != nil {
						t.Fatal(err)
					}
				} else {
					t.Errorf("json: the snapshot re-encoded with today's diagnoses differs from %s (-update rewrites it if the change is right):\n%s", docPath, diffLines(string(raw), out["json"]))
				}
			}
			delete(out, "json")
			for ext, got := range out {
				path := filepath.Join("testdata", "golden", pt.name+"."+ext)
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to write it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from the golden (-want +got):\n%s", path, diffLines(string(want), got))
				}
			}
			checkMarkdown(t, out["md"], snap)
			checkMermaid(t, out["mmd"])
			checkDot(t, out["dot"])
			checkWidth(t, out["w72.txt"], out["txt"], 72)
			// With color, the cut is the same: no escape sequence is cut.
			var colored bytes.Buffer
			if err := report.Text(&colored, &heuristics.Result{Snap: snap, Diagnoses: diags}, report.TextOptions{Color: true, Width: 72}); err != nil {
				t.Fatal(err)
			}
			if plain := sgr.ReplaceAllString(colored.String(), ""); plain != out["w72.txt"] {
				t.Errorf("text: with color and width 72, differs from without color:\n%s", diffLines(out["w72.txt"], plain))
			}
			if diags[0].Deadlock && !strings.Contains(out["dot"], "color=red") {
				t.Errorf("dot: no red edge for the top diagnosis %s", diags[0].ID)
			}
		})
	}
}

// TestLiveRender runs the patients, attaches and diagnoses as the
// heuristics' live tests do, and renders every format: the live path
// still renders (whatever the pids). With -capture it saves the
// snapshots the goldens are made from.
func TestLiveRender(t *testing.T) {
	for _, pt := range patients {
		t.Run(pt.name, func(t *testing.T) {
			patient.RequirePtrace(t)
			var p *patient.Proc
			if pt.golang {
				p = patient.StartGo(t, patient.BuildGo(t, pt.source))
			} else {
				p = patient.Start(t, patient.Build(t, pt.source, patient.O2g...))
			}
			targets := []int{p.Pid}
			if pt.child {
				child := p.Int(t, "child")
				p.KillChildAtEnd(t, child)
				targets = []int{child, p.Pid}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			snap, err := attach.Attach(ctx, targets, attach.Options{Samples: 3, Interval: 100 * time.Millisecond})
			if err != nil {
				t.Fatalf("Attach(%v): %v", targets, err)
			}
			out, diags := renderings(t, snap)
			if len(diags) == 0 || diags[0].ID != pt.top {
				t.Fatalf("top diagnosis: %v, want %s", diags, pt.top)
			}
			t.Logf("verdict: [%s] %s", diags[0].ID, diags[0].Summary)
			checkMarkdown(t, out["md"], snap)
			checkMermaid(t, out["mmd"])
			checkDot(t, out["dot"])
			checkWidth(t, out["w72.txt"], out["txt"], 72)
			if !json.Valid([]byte(out["json"])) {
				t.Errorf("json: not valid JSON")
			}
			if *capture {
				path := filepath.Join("testdata", "snapshots", pt.name+".json")
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(out["json"]), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s", path)
			}
		})
	}
}

// --- structural checks, shared with the hostile-strings test -------------

// mdBlock is a fenced code block of a markdown report.
type mdBlock struct {
	info  string
	lines []string
}

// scanMarkdown splits markdown into fenced code blocks and the lines
// outside them, as CommonMark does: a fence is three or more backticks
// (or tildes) indented at most three spaces; a block closes at a line of
// at least as many of the same character and nothing else.
func scanMarkdown(t *testing.T, md string) (blocks []mdBlock, outside []string) {
	t.Helper()
	open := regexp.MustCompile("^ {0,3}(`{3,}|~{3,})(.*)$")
	var fence string
	var cur *mdBlock
	for _, l := range strings.Split(md, "\n") {
		if cur == nil {
			if m := open.FindStringSubmatch(l); m != nil {
				if m[1][0] == '`' && strings.Contains(m[2], "`") {
					outside = append(outside, l) // not a fence: a backtick in the info string
					continue
				}
				fence = m[1]
				blocks = append(blocks, mdBlock{info: strings.TrimSpace(m[2])})
				cur = &blocks[len(blocks)-1]
				continue
			}
			outside = append(outside, l)
			continue
		}
		trimmed := strings.TrimRight(strings.TrimLeft(l, " "), " \t")
		if len(l)-len(strings.TrimLeft(l, " ")) <= 3 && len(trimmed) >= len(fence) &&
			strings.Trim(trimmed, fence[:1]) == "" {
			cur = nil
			continue
		}
		cur.lines = append(cur.lines, l)
	}
	if cur != nil {
		t.Errorf("markdown: a code block (%q) is never closed", cur.info)
	}
	return blocks, outside
}

// sgr matches the color sequences the text report writes.
var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

var allowedTag = regexp.MustCompile(`^(</?(details|summary)>|<code/>)`)

// checkMarkdown checks a markdown report's structure: the verdict first,
// one mermaid block when the graph has edges, one code block per group of
// stacks inside balanced <details>, no HTML tag but ours and no control
// character.
func checkMarkdown(t *testing.T, md string, snap *stacks.Snapshot) {
	t.Helper()
	checkNoControl(t, "markdown", md)
	if !strings.HasPrefix(md, "**") {
		t.Errorf("markdown: the first line is not the verdict: %q", strings.SplitN(md, "\n", 2)[0])
	}
	blocks, outside := scanMarkdown(t, md)
	groups := 0
	for _, p := range snap.Processes {
		groups += len(stacks.GroupThreads(p.Threads))
	}
	var code int
	for _, b := range blocks {
		switch b.info {
		case "mermaid":
			checkMermaid(t, strings.Join(b.lines, "\n")+"\n")
		case "":
			code++
		default:
			t.Errorf("markdown: a code block with info %q", b.info)
		}
	}
	if code != groups {
		t.Errorf("markdown: %d stack code blocks, want one per group (%d)", code, groups)
	}
	for i, l := range outside {
		outside[i] = stripCodeSpans(l)
	}
	depth, details := 0, 0
	for _, l := range outside {
		for i := strings.IndexByte(l, '<'); i >= 0; i = strings.IndexByte(l, '<') {
			if !allowedTag.MatchString(l[i:]) {
				t.Errorf("markdown: an HTML tag that is not ours outside code: %q", l)
				break
			}
			l = l[i+1:]
		}
	}
	for _, l := range outside {
		switch {
		case strings.HasPrefix(l, "<details>"):
			if !regexp.MustCompile(`^<details><summary>[^<>]*</summary>$`).MatchString(l) {
				t.Errorf("markdown: a summary line that is not one summary: %q", l)
			}
			depth++
			details++
		case l == "</details>":
			depth--
		}
		if depth < 0 || depth > 1 {
			t.Errorf("markdown: <details> nested or unbalanced at %q", l)
		}
		for _, m := range regexp.MustCompile(`(?:^|[^\\])\]\(([^)]*)\)`).FindAllStringSubmatch(l, -1) {
			if !strings.HasPrefix(m[1], "https://") && !strings.HasPrefix(m[1], "http://") {
				t.Errorf("markdown: a link to %q", m[1])
			}
		}
	}
	if depth != 0 || details != groups {
		t.Errorf("markdown: %d <details> (depth at end %d), want %d", details, depth, groups)
	}
}

// stripCodeSpans removes the inline code spans of a line, as CommonMark
// reads them: a run of n backticks not escaped by a backslash opens a
// span that the next run of exactly n closes; a run with no closer is
// text. What is left is the line's Markdown text.
func stripCodeSpans(l string) string {
	var b strings.Builder
	for i := 0; i < len(l); {
		switch {
		case l[i] == '\\' && i+1 < len(l):
			b.WriteString(l[i : i+2])
			i += 2
			continue
		case l[i] != '`':
			b.WriteByte(l[i])
			i++
			continue
		}
		n := 0
		for i+n < len(l) && l[i+n] == '`' {
			n++
		}
		closed := -1
		for j := i + n; j < len(l); {
			if l[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(l) && l[j+m] == '`' {
				m++
			}
			if m == n {
				closed = j + m
				break
			}
			j += m
		}
		if closed < 0 {
			b.WriteString(l[i : i+n])
			i += n
			continue
		}
		b.WriteString("<code/>")
		i = closed
	}
	return b.String()
}

// mermaidLine is every line shape the Mermaid renderer writes; labels hold
// no quote, bracket, pipe, backtick or HTML but <br>.
var mermaidLine = func() *regexp.Regexp {
	label := `"(?:[^"<>&#;\x60|\[\](){}]|<br>|#[0-9]+;)*"`
	return regexp.MustCompile(`^(?:flowchart TB` +
		`|  subgraph proc[0-9]+ \[` + label + `\]` +
		`|    direction TB` +
		`|  end` +
		`| {2,4}[a-z]+[0-9a-f_]*(?:\[` + label + `\]|\(\[` + label + `\]\))` +
		`|  [a-z]+[0-9a-f_]* -->\|"[a-z ]+"\| [a-z]+[0-9a-f_]*` +
		`|  linkStyle [0-9,]+ stroke:#d1242f,stroke-width:3px,color:#d1242f` +
		`|  classDef (?:mutex|ghost) [a-z:#0-9,\- ]+` +
		`|  class [a-z0-9_,]+ (?:mutex|ghost))$`)
}()

func checkMermaid(t *testing.T, text string) {
	t.Helper()
	checkNoControl(t, "mermaid", text)
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if !mermaidLine.MatchString(l) {
			t.Errorf("mermaid: a line of unexpected shape: %q", l)
		}
	}
}

// dotLine is every line shape the DOT renderer writes; a quoted string
// holds no raw quote and no backslash but \\, \" and our \n.
var dotLine = func() *regexp.Regexp {
	str := `"(?:[^"\\]|\\[\\"n])*"`
	return regexp.MustCompile(`^(?:digraph waitfor \{|\}|  \}` +
		`|  rankdir=LR;|  compound=true;|  labelloc=t;|  label=` + str + `;` +
		`|  (?:node|edge) \[fontname="Helvetica", fontsize=[0-9]+\];` +
		`|  subgraph cluster_proc[0-9]+ \{` +
		`|    label=` + str + `;|    style=rounded;|    color=gray60;` +
		`| {2,4}[a-z]+[0-9a-f_]* \[shape=[a-z0-9]+(?:, style=dashed)?, label=` + str + `\];` +
		`|  [a-z]+[0-9a-f_]* -> [a-z]+[0-9a-f_]* \[label=` + str + `(?:, lhead=cluster_proc[0-9]+)?(?:, color=red, fontcolor=red, penwidth=2)?\];)$`)
}()

// checkDot checks the DOT text line by line and, where Graphviz is
// installed, has `dot -Tsvg` read it.
func checkDot(t *testing.T, dot string) {
	t.Helper()
	checkNoControl(t, "dot", dot)
	for _, l := range strings.Split(strings.TrimSuffix(dot, "\n"), "\n") {
		if !dotLine.MatchString(l) {
			t.Errorf("dot: a line of unexpected shape: %q", l)
		}
	}
	svg := runDot(t, dot)
	if svg != "" && regexp.MustCompile(`(?i)<script|javascript:`).MatchString(svg) {
		t.Errorf("dot -Tsvg: the SVG holds a script:\n%s", svg)
	}
}

// runDot runs `dot -Tsvg` on the text and returns the SVG; "" when
// Graphviz is not installed (a failure under CI=true, where
// scripts/install-deps.sh installs it).
func runDot(t *testing.T, dot string) string {
	t.Helper()
	path, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Errorf("CI=true: graphviz's dot not installed (scripts/install-deps.sh installs it): %v", err)
		} else {
			t.Logf("graphviz's dot not installed: DOT checked by shape only")
		}
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin = strings.NewReader(dot)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil || errOut.Len() > 0 {
		t.Errorf("dot -Tsvg: %v\n%s\ninput:\n%s", err, errOut.String(), dot)
	}
	return out.String()
}

// checkNoControl: no control character but newline (and tab), so no
// escape sequence.
func checkNoControl(t *testing.T, what, s string) {
	t.Helper()
	if !utf8Valid(s) {
		t.Errorf("%s: invalid UTF-8", what)
	}
	for i, r := range s {
		if r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0) {
			t.Errorf("%s: control character %U at byte %d: %q", what, r, i, s[max(0, i-40):min(len(s), i+40)])
			return
		}
	}
}

// checkWidth: the cut text differs from the uncut only in frame lines,
// each at most width runes and ending in "…" when it was cut.
func checkWidth(t *testing.T, cut, full string, width int) {
	t.Helper()
	// The verdicts (everything before the first process) are wrapped:
	// the same words, no line longer than width unless one word is.
	split := func(s string) (string, string) {
		if i := strings.Index(s, "\npid "); i >= 0 {
			return s[:i], s[i:]
		}
		return "", s
	}
	cutDiag, cut := split(cut)
	fullDiag, full := split(full)
	if strings.Join(strings.Fields(cutDiag), " ") != strings.Join(strings.Fields(fullDiag), " ") {
		t.Errorf("width %d: the wrapped verdicts do not have the words of the unwrapped ones:\n%s", width, diffLines(fullDiag, cutDiag))
	}
	for _, l := range strings.Split(cutDiag, "\n") {
		if runeLen(l) > width && len(strings.Fields(l)) > 2 { // a label and one long word cannot be broken
			t.Errorf("width %d: a verdict line of %d runes: %q", width, runeLen(l), l)
		}
	}
	cl, fl := strings.Split(cut, "\n"), strings.Split(full, "\n")
	if len(cl) != len(fl) {
		t.Fatalf("width %d: %d lines, want %d", width, len(cl), len(fl))
	}
	frame := regexp.MustCompile(`^  #[0-9]+ +`)
	for i := range cl {
		if cl[i] == fl[i] {
			if frame.MatchString(fl[i]) && runeLen(fl[i]) > width {
				t.Errorf("width %d: a frame line of %d runes not cut: %q", width, runeLen(fl[i]), fl[i])
			}
			continue
		}
		if !frame.MatchString(fl[i]) {
			t.Errorf("width %d: a line that is not a frame changed: %q → %q", width, fl[i], cl[i])
			continue
		}
		if runeLen(cl[i]) != width || !strings.HasSuffix(cl[i], "…") || !strings.HasPrefix(fl[i], strings.TrimSuffix(cl[i], "…")) {
			t.Errorf("width %d: frame line %q cut as %q", width, fl[i], cl[i])
		}
	}
}

func runeLen(s string) int { return len([]rune(s)) }

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// diffLines is a small line diff for failure messages: the first lines
// that differ, with some context.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  -%q\n  +%q\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
