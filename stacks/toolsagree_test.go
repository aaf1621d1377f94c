package stacks

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// The same process read by three tools: gdb, lldb and eu-stack were
// attached one after the other to each patient (scripts/capture-tool-dumps.sh),
// so every thread must show the same functions in all three dumps.
//
// The tools differ in ways that are not the parsers' doing, and the
// comparison sets exactly these aside:
//   - inlined frames: lldb 14 leaves some unnamed or out (see ParseLLDB),
//     and only eu-stack -i/-v prints them at all: machine frames
//     (Inlined false) are compared;
//   - spelling: "___pthread_mutex_lock" (gdb, lldb) and
//     "__pthread_mutex_lock@GLIBC_2.2.5" (eu-stack's ELF symbol),
//     "clone3" and "__clone3", parameter lists, and eu-stack -v's DWARF
//     names, which are not qualified ("_M_run" for gdb's
//     "std::thread::_State_impl<…>::_M_run"): names are compared as
//     agreeKey reduces them;
//   - frames past main: gdb stops at main (backtrace past-main is off);
//   - tail-call frames that gdb or lldb rebuild from DWARF call-site
//     information and CFI unwinders cannot see (eu-stack never shows
//     them): agreeTailCalls.
var agreeTailCalls = map[string]bool{
	"futex_abstimed_wait_cancelable64": true, // gdb
	"pthread_join":                     true, // gdb, and lldb's "[artificial]" frame
}

// agreeKey reduces a function name to what every tool agrees on.
func agreeKey(f Frame) string {
	if f.Signal {
		return "<signal>"
	}
	name := unqualified(FuncBase(noSymbolVersion(f.Func)))
	name = strings.TrimPrefix(name, "__GI_")
	name = strings.TrimLeft(name, "_")
	if name == "" {
		return "??"
	}
	return name
}

// unqualified drops the namespaces and classes before a function's name:
// what follows the last "::" outside template arguments and parentheses.
func unqualified(s string) string {
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '(':
			depth++
		case '>', ')':
			if depth > 0 {
				depth--
			}
		case ':':
			if depth == 0 && i+1 < len(s) && s[i+1] == ':' {
				start = i + 2
				i++
			}
		}
	}
	return s[start:]
}

// machineFrames lists the keys of a stack's machine frames, up to main.
func machineFrames(st []Frame) []string { return frameKeys(st, false) }

// allFrames lists the keys of every frame, inlined ones too, up to main.
func allFrames(st []Frame) []string { return frameKeys(st, true) }

func frameKeys(st []Frame, inlined bool) []string {
	var out []string
	for _, f := range st {
		if f.Inlined && !inlined {
			continue
		}
		k := agreeKey(f)
		if agreeTailCalls[k] {
			continue
		}
		out = append(out, k)
		if k == "main" {
			break
		}
	}
	return out
}

func TestToolsAgree(t *testing.T) {
	for _, name := range []string{"mutex_o2", "cxx_mutex", "sighandler"} {
		t.Run(name, func(t *testing.T) {
			gdb, _ := parseGDBFile(t, "xcheck_"+name+".txt")
			lldb, _ := parseLLDBFile(t, name+".txt")
			euv, _ := parseEUFile(t, name+"_v.txt")
			checkToolsAgree(t, gdb, map[string]*Snapshot{"lldb": lldb, "eu-stack -v": euv})
			// plain eu-stack (ELF symbols, no inlined frames): the same
			// machine frames as eu-stack -v, PC for PC
			plain, _ := parseEUFile(t, name+".txt")
			for _, th := range euv.Processes[0].Threads {
				var want, got []uint64
				for _, f := range th.Stack {
					if !f.Inlined {
						want = append(want, f.PC)
					}
				}
				for _, f := range threadByTid(t, plain.Processes[0], th.Tid).Stack {
					got = append(got, f.PC)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("thread %d: eu-stack %x\n  eu-stack -v %x", th.Tid, got, want)
				}
			}
			// eu-stack -v prints the inlined frames gdb prints: all of them agree
			for _, th := range gdb.Processes[0].Threads {
				ev := threadByTid(t, euv.Processes[0], th.Tid)
				if a, b := allFrames(th.Stack), allFrames(ev.Stack); !reflect.DeepEqual(a, b) {
					t.Errorf("thread %d with inlined frames:\n   gdb %q\n   eu-stack -v %q", th.Tid, a, b)
				}
			}
		})
	}
}

// checkToolsAgree compares the machine frames of every thread of gdb's
// dump with the same thread in the other tools' dumps.
func checkToolsAgree(t *testing.T, gdb *Snapshot, others map[string]*Snapshot) {
	t.Helper()
	gp := gdb.Processes[0]
	if len(gp.Threads) < 2 {
		t.Fatalf("gdb: %d threads", len(gp.Threads))
	}
	for tool, snap := range others {
		op := snap.Processes[0]
		if op.Pid != gp.Pid || len(op.Threads) != len(gp.Threads) {
			t.Errorf("%s: pid %d, %d threads; gdb: pid %d, %d threads", tool, op.Pid, len(op.Threads), gp.Pid, len(gp.Threads))
			continue
		}
		for _, th := range gp.Threads {
			var ot *Thread
			for _, o := range op.Threads {
				if o.Tid == th.Tid {
					ot = o
				}
			}
			if ot == nil {
				t.Errorf("%s: no thread %d", tool, th.Tid)
				continue
			}
			want, got := machineFrames(th.Stack), machineFrames(ot.Stack)
			if len(want) < 3 || !reflect.DeepEqual(got, want) {
				t.Errorf("thread %d %q:\n   gdb %q\n  %s %q", th.Tid, th.Name, want, tool, got)
			}
			if tool == "lldb" && ot.Name != th.Name {
				t.Errorf("thread %d: lldb names it %q, gdb %q", th.Tid, ot.Name, th.Name)
			}
		}
	}
}

// TestToolsAgreeLive is TestToolsAgree on a patient running now, with the
// tools installed here: the parsers must keep up with the tools' output,
// not only with the dumps stored.
func TestToolsAgreeLive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: attaches gdb, lldb and eu-stack to a patient")
	}
	lldbTool := patient.RequireTool(t, "lldb")
	euTool := patient.RequireTool(t, "eu-stack")
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "cxx_mutex.cpp", patient.O2g...))
	p.Settle(2 * time.Second)
	pid := strconv.Itoa(p.Pid)

	parse := func(what string, out []byte, fn dumpParser) *Snapshot {
		t.Helper()
		snap, skipped, err := fn(bytes.NewReader(out))
		if err != nil || len(skipped) != 0 {
			t.Fatalf("%s: err %v skipped %v\n%s", what, err, skipped, out)
		}
		return snap
	}
	gdb := parse("gdb", []byte(patient.GDBBacktrace(t, p.Pid)), ParseGDB)
	lldb := parse("lldb", runTool(t, lldbTool, "-p", pid, "--batch", "-o", "thread list", "-o", "bt all"), ParseLLDB)
	euv := parse("eu-stack -v", runTool(t, euTool, "-v", "-p", pid), ParseEUStack)
	checkToolsAgree(t, gdb, map[string]*Snapshot{"lldb": lldb, "eu-stack -v": euv})
}

// runTool runs a debugger on a patient with a timeout and returns what it
// printed, stdout and stderr interleaved. eu-stack's exit status 1 (some
// frames could not be shown) is not a failure.
func runTool(t *testing.T, tool string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %q: timed out\n%s", tool, args, out)
	}
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1 && strings.HasSuffix(tool, "eu-stack")) {
		t.Fatalf("%s %q: %v\n%s", tool, args, err, out)
	}
	return out
}

// pstack (Red Hat's gdb package; Debian ships none) prints gdb's
// `thread apply all bt` filtered to its "Thread" and "#" lines: it is
// detected and read as gdb's format (testdata/dumps/gdb/pstack_*.txt).
func TestParsePstack(t *testing.T) {
	for _, tt := range []struct {
		name    string
		threads int
	}{{"pstack_mutex_o2.txt", 5}, {"pstack_threads10.txt", 12}} {
		snap, skipped, format, err := Parse(bytes.NewReader(readStoredDump(t, "gdb", tt.name)), "")
		if err != nil || format != "gdb" || len(skipped) != 0 {
			t.Fatalf("%s: format %q err %v skipped %v", tt.name, format, err, skipped)
		}
		p := snap.Processes[0]
		if len(p.Threads) != tt.threads || p.Pid == 0 || p.Pid != p.Threads[len(p.Threads)-1].Tid {
			t.Errorf("%s: pid %d, %d threads", tt.name, p.Pid, len(p.Threads))
		}
		for _, th := range p.Threads {
			if th.Tid == 0 || th.Name == "" || len(th.Stack) < 4 {
				t.Errorf("%s: thread %+v", tt.name, th)
			}
		}
	}
}
