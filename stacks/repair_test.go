package stacks

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The repair step is tested on real dumps (testdata/dumps, each made by
// the real tool, see the README beside them) damaged here the way
// renderers, log collectors and people damage them: the damaged dump
// must read as the clean one did, and say what was repaired.

// damage is one kind of damage done to a dump's text.
type damage struct {
	name string
	note string // what the repair says
	do   func(lines []string) []string
}

var damages = []damage{
	{"quoted", "quote markers removed", func(ls []string) []string {
		return eachLine(ls, func(i int, l string) string { return "> " + l })
	}},
	{"journalctl", "journalctl prefixes removed", func(ls []string) []string {
		return eachLine(ls, func(i int, l string) string {
			return fmt.Sprintf("Dec 01 21:%02d:%02d build-7 app[4711]: %s", i/60%60, i%60, l)
		})
	}},
	{"journalctl-r", "journalctl -r", func(ls []string) []string {
		out := eachLine(ls, func(i int, l string) string {
			return fmt.Sprintf("Dec 01 21:%02d:%02d build-7 app[4711]: %s", i/60%60, i%60, l)
		})
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}},
	{"grep-n-C", "grep -n prefixes removed", func(ls []string) []string {
		return eachLine(ls, func(i int, l string) string {
			sep := "-"
			if i%5 == 0 {
				sep = ":"
			}
			return fmt.Sprintf("%d%s%s", 100+i, sep, l)
		})
	}},
	{"timestamps", "time stamps removed", func(ls []string) []string {
		return eachLine(ls, func(i int, l string) string { return fmt.Sprintf("[2026-12-01 21:10:%02d.%03d] %s", i%60, i, l) })
	}},
	{"details", "HTML tags", func(ls []string) []string {
		out := []string{"<details>", "<summary>backtrace (click to open)</summary>", "", "<pre>"}
		out = append(out, eachLine(ls, func(i int, l string) string {
			return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(l)
		})...)
		return append(out, "</pre>", "</details>")
	}},
	{"annotated", "a reader's marks", func(ls []string) []string {
		return eachLine(ls, func(i int, l string) string {
			if isFrameText(l) && i%2 == 0 {
				return l + "   <-- holds the lock"
			}
			if isFrameText(l) {
				return "--> " + l
			}
			return l
		})
	}},
	{"abridged", "frames left out by hand", func(ls []string) []string {
		var out []string
		for i, l := range ls {
			out = append(out, l)
			if isFrameText(l) && (i+1 == len(ls) || !isFrameText(ls[i+1])) {
				out = append(out, "(20 more frames)", "...")
			}
		}
		return out
	}},
	{"inline-code", "inline code", func(ls []string) []string {
		return eachLine(ls, func(i int, l string) string {
			if strings.TrimSpace(l) == "" || strings.Contains(l, "`") {
				return l
			}
			return "`" + l + "`"
		})
	}},
	{"inline-code-cut", "inline code", func(ls []string) []string {
		// as above, the last line cut before its closing backtick
		last := -1
		out := eachLine(ls, func(i int, l string) string {
			if strings.TrimSpace(l) == "" || strings.Contains(l, "`") {
				return l
			}
			last = i
			return "`" + l + "`"
		})
		if last >= 0 {
			out[last] = strings.TrimSuffix(out[last], "`")
		}
		return out
	}},
	{"github-numbers", "'# 0'", func(ls []string) []string {
		return eachLine(ls, func(i int, l string) string {
			if n, ok := frameNumber(l); ok && strings.HasPrefix(l, "#"+n+"  ") {
				if i%2 == 0 {
					return "# " + n + "  " + l[len(n)+3:]
				}
				return "#" + n + " <https://github.com/o/r/issues/" + n + ">  " + l[len(n)+3:]
			}
			return l
		})
	}},
	{"markdown-escaped", "a Markdown importer's backslashes", func(ls []string) []string {
		esc := strings.NewReplacer("(", `\(`, ")", `\)`, "_", `\_`, "#", `\#`, ".", `\.`)
		return eachLine(ls, func(i int, l string) string { return esc.Replace(l) })
	}},
	{"docker-compose", "docker compose's service prefixes", func(ls []string) []string {
		return eachLine(ls, func(i int, l string) string {
			if l == "" && i%2 == 0 {
				return "app-server_1  |" // compose trims the blank after the bar on some lines
			}
			return "app-server_1  | " + l
		})
	}},
	{"wrapped-80", "wrapped at 72–80 columns", func(ls []string) []string {
		var out []string
		for _, l := range ls {
			frame := isFrameText(l)
			for frame && len(l) > 80 && l[79] != ' ' && l[80] != ' ' && l[80] != '\t' {
				out = append(out, l[:80])
				l = l[80:]
			}
			out = append(out, l)
		}
		return out
	}},
}

// isFrameText says whether a line of a stored dump is a frame of its
// format (gdb, eu-stack and lldb frames, goroutine calls and their file
// lines, Python frames).
func isFrameText(l string) bool {
	t := strings.TrimSpace(l)
	return strings.HasPrefix(t, "#") || strings.HasPrefix(t, "frame #") || strings.HasPrefix(t, "* frame #") ||
		strings.HasPrefix(t, "File \"") || strings.HasPrefix(l, "\t/") || strings.HasPrefix(l, "main.") || strings.HasPrefix(l, "sync.") ||
		strings.HasPrefix(t, "at ") || delveFrameRE.MatchString(t) // jstack's and delve's frames, delve's file lines
}

// delveFrameRE is a frame of delve's bt and stack: "3  0x… in main.f".
var delveFrameRE = regexp.MustCompile(`^\d+\s+0x[0-9a-f]+ in \S`)

func eachLine(ls []string, f func(int, string) string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = f(i, l)
	}
	return out
}

// readShape is what a parse made of a dump, for comparing two parses.
func readShape(t *testing.T, in string) (string, []string) {
	t.Helper()
	snap, _, format, err := Parse(strings.NewReader(in), "")
	if err != nil {
		t.Fatalf("%v", err)
	}
	var b strings.Builder
	var notes []string
	fmt.Fprintf(&b, "%s:", format)
	for _, p := range snap.Processes {
		fmt.Fprintf(&b, "\npid %d", p.Pid)
		for _, th := range p.Threads {
			fmt.Fprintf(&b, "\n  %d %q %q", th.Tid, th.Name, funcs(th.Stack))
			for _, f := range th.Stack {
				fmt.Fprintf(&b, " %s:%d", f.File, f.Line)
			}
		}
		notes = append(notes, p.Notes...)
	}
	return b.String(), notes
}

var repairDumps = []string{
	"gdb/sighandler.txt", "gdb/abba.txt", "gdb/mutex_o0g_full.txt", "eu-stack/abba_bl.txt",
	"lldb/abba.txt", "goroutines/abba_sigquit.txt", "faulthandler/lock_sigabrt.txt", "py-spy/lock.txt",
	"crash-report/looseleaf_deadlock.txt", "gdb/variant_info_threads_bt.txt",
	"delve/abba_stack_full.txt", "delve/abba_goroutines_t.txt", "delve/abba_bt.txt",
	"jstack/monitor_abba.txt", "jstack/jcmd_thread_print_monitor.txt", "jstack/reentrant_abba_l.txt",
}

func TestRepairDamage(t *testing.T) {
	for _, name := range repairDumps {
		clean := string(readStoredDump(t, strings.Split(name, "/")[0], strings.Split(name, "/")[1]))
		want, _ := readShape(t, clean)
		lines := strings.Split(strings.TrimRight(clean, "\n"), "\n")
		for _, d := range damages {
			t.Run(name+"/"+d.name, func(t *testing.T) {
				out := d.do(lines)
				if slices.Equal(out, lines) {
					t.Skip("nothing to damage") // no line of the kind this damage touches
				}
				damaged := strings.Join(out, "\n") + "\n"
				got, notes := readShape(t, damaged)
				if got != want {
					t.Errorf("damaged dump reads otherwise:\n%s", firstLineDiff(want, got))
				}
				if !hasNoteWith(notes, d.note) {
					t.Errorf("no note says %q: %q", d.note, notes)
				}
			})
		}
	}
}

func hasNoteWith(notes []string, sub string) bool {
	for _, n := range notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

// TestRepairSignalFrame: Markdown eats "<signal handler called>" (an
// HTML tag to it), leaving "#4  "; the frame comes back.
func TestRepairSignalFrame(t *testing.T) {
	clean := string(readStoredDump(t, "gdb", "sighandler.txt"))
	want, _ := readShape(t, clean)
	got, notes := readShape(t, strings.ReplaceAll(clean, "<signal handler called>", ""))
	if got != want {
		t.Errorf("%s", firstLineDiff(want, got))
	}
	if !hasNoteWith(notes, "<signal handler called>") {
		t.Errorf("notes %q", notes)
	}
}

// TestRepairChain: a call chain written by hand is a thread.
func TestRepairChain(t *testing.T) {
	for _, in := range []string{
		"The main thread is stuck here:\n\nmain -> run_jobs -> pthread_mutex_lock\n",
		"pthread_mutex_lock <- run_jobs <- main\n",
		"main → run_jobs → pthread_mutex_lock\n",
	} {
		snap, _, format, err := Parse(strings.NewReader(in), "")
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		th := snap.Processes[0].Threads[0]
		if got := funcs(th.Stack); format != "gdb" || !reflect.DeepEqual(got, []string{"pthread_mutex_lock", "run_jobs", "main"}) {
			t.Errorf("%q: %s %q", in, format, got)
		}
	}
}

// TestRepairNotesBounded: damage on every line of a large input gives a
// few notes, not one a line, in linear time.
func TestRepairNotesBounded(t *testing.T) {
	var b bytes.Buffer
	for i := 0; b.Len() < 8<<20; i++ {
		fmt.Fprintf(&b, "Dec 01 21:10:%02d host app[1]: > [2026-12-01 21:10:48] #%d  0x00007f in f%d (x=1) at a.c:%d   <-- here\n", i%60, i%50, i, i)
	}
	start := time.Now()
	snap, skipped, _, err := Parse(&b, "")
	if err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, p := range snap.Processes {
		notes += len(p.Notes)
	}
	if notes > 60 || len(skipped) > 10 {
		t.Errorf("%d notes, %d skipped ranges", notes, len(skipped))
	}
	if d := time.Since(start); d > toolLinearBound {
		t.Errorf("%v for 8 MB", d)
	}
}

// FuzzRepair: whatever the input, Parse with detection holds what every
// reader promises.
func FuzzRepair(f *testing.F) {
	for _, name := range repairDumps {
		parts := strings.Split(name, "/")
		clean := readStoredDump(f, parts[0], parts[1])
		lines := strings.Split(strings.TrimRight(string(clean), "\n"), "\n")
		for _, d := range damages {
			in := strings.Join(d.do(lines), "\n")
			f.Add([]byte(in[:min(len(in), 16<<10)]))
		}
	}
	f.Add([]byte("12-a\n13:b\n--\n14-c\n"))
	f.Add([]byte("a -> b -> c\n#3\n...\n"))
	f.Fuzz(checkParse) // split_fuzz_test.go
}
