package stacks

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestProcessHeadings: a real paste of two forked children's gdb py-bt,
// each under a Markdown bullet naming it (sonic-mgmt#22212), is two
// processes with the pids the bullets name, one thread each, most recent
// call first; a second py-bt block is another thread, never appended to
// the first's stack.
func TestProcessHeadings(t *testing.T) {
	in := readStoredDump(t, "gdb", "pybt_sonic_mgmt_22212_pasted.md")
	snap, _, format, err := Parse(bytes.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	if format != "gdb" {
		t.Errorf("format %q: py-bt is gdb's", format)
	}
	if len(snap.Processes) != 2 {
		t.Fatalf("%d processes", len(snap.Processes))
	}
	want := []struct {
		pid   int
		funcs []string
	}{
		{91605, []string{"flush", "emit", "emit", "handle", "callHandlers", "handle", "_log", "debug", "_run", "_run_on_asics"}},
		{91607, []string{"_thread.RLock.__enter__"}},
	}
	for i, w := range want {
		p := snap.Processes[i]
		if p.Pid != w.pid || !p.HeadedChild() || !strings.Contains(p.Heading, strconv.Itoa(w.pid)) {
			t.Errorf("process %d: pid %d heading %q", i, p.Pid, p.Heading)
		}
		if len(p.Threads) != 1 {
			t.Fatalf("process %d: %d threads", w.pid, len(p.Threads))
		}
		if got := funcs(p.Threads[0].Stack); !reflect.DeepEqual(got, w.funcs) {
			t.Errorf("process %d: stack %q", w.pid, got)
		}
	}

	// `thread apply all py-bt` without thread headers: each block a thread
	two := "(gdb) py-bt\nTraceback (most recent call first):\n  File \"a.py\", line 1, in f\n    f()\n" +
		"(gdb) py-bt\nTraceback (most recent call first):\n  <built-in method acquire of _thread.lock object at remote 0x1>\n"
	snap, _, _, err = Parse(strings.NewReader(two), "")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(snap.Processes[0].Threads); len(snap.Processes) != 1 || n != 2 {
		t.Errorf("%d processes, %d threads: want 1 process of 2", len(snap.Processes), n)
	}
}

func TestProcessHeadingLines(t *testing.T) {
	yes := map[string]int{
		"* subprocess 91605  backtrace:":    91605,
		"- PID 4711:":                       4711,
		"## Child process 12 stack":         12,
		"**Process 7 (worker) backtrace:**": 7,
		"pid: 99 threads:":                  99,
		"Parent 3:":                         3,
	}
	for line, pid := range yes {
		if got, ok := processHeading(line); !ok || got != pid {
			t.Errorf("%q: %d %v, want %d", line, got, ok, pid)
		}
	}
	for _, line := range []string{
		"Process 4130: python3 parent.py", // py-spy's header
		"Process 4711 stopped",            // lldb's
		"PID 1234 - process",              // eu-stack's
		"processing 12 items:",
		"Thread 2 (Thread 0x7f (LWP 12)):",
		"* thread #1, stop reason = signal SIGSTOP",
		"process 12",
	} {
		if pid, ok := processHeading(line); ok {
			t.Errorf("%q read as a heading of %d", line, pid)
		}
	}
}

// FuzzProcessHeading: a heading names a positive pid it spells, and
// begins that process before any dump.
func FuzzProcessHeading(f *testing.F) {
	for _, s := range []string{"* subprocess 91605  backtrace:", "PID 1:", "## child 2 dump", "Process 3: python x.py", "pid=4 stack"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		line = strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(line, "\n", " "), "\r", " "))
		pid, ok := processHeading(line)
		if !ok {
			return
		}
		if pid <= 0 || !strings.Contains(line, strconv.Itoa(pid)) {
			t.Fatalf("%q: pid %d", line, pid)
		}
		in := line + "\n#0  0x0000000000401136 in f () at x.c:3\n#1  0x0000000000401150 in main () at x.c:9\n"
		snap, _, _, err := Parse(strings.NewReader(in), "gdb")
		if err != nil {
			t.Fatal(err)
		}
		if p := snap.Processes[0]; len(snap.Processes) != 1 || p.Pid != pid {
			t.Fatalf("%q: %d processes, pid %d", line, len(snap.Processes), p.Pid)
		}
	})
}
