package attach

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// TextSegment reads the executable's r-x mappings of process pid from
// /proc/PID/mem: the code a breakpoint would be written into. Tests
// compare it before and after an attach.
func TextSegment(pid int) ([]byte, error) {
	exe, err := os.Readlink(procPath(pid, "exe"))
	if err != nil {
		return nil, err
	}
	maps, err := os.ReadFile(procPath(pid, "maps"))
	if err != nil {
		return nil, err
	}
	mem, err := os.Open(procPath(pid, "mem"))
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	var text []byte
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[1] != "r-xp" || f[5] != exe {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("maps line %q", sc.Text())
		}
		buf := make([]byte, end-start)
		if _, err := mem.ReadAt(buf, int64(start)); err != nil {
			return nil, fmt.Errorf("read text at %#x: %v", start, err)
		}
		text = append(text, buf...)
	}
	if len(text) == 0 {
		return nil, fmt.Errorf("pid %d: no r-x mapping of %s", pid, exe)
	}
	return text, nil
}

// TestGoReadRefusesWrites: opening delve's target on a live Go process
// makes delve set its unrecovered-panic and fatal-throw breakpoints; the
// read-only backend refuses them (and would refuse any other write), so
// the text segment is the same byte for byte and no thread stays traced.
func TestGoReadRefusesWrites(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.BuildGo(t, "panicker"))
	before, tg := openGoTarget(t, p.Pid)
	opts := Options{Samples: 3, Threads: true}
	opts.defaults()
	s := &sampler{opts: opts, tracer: newTracer()}
	defer func() { s.tracer.close() }()
	for i := 0; i < opts.Samples; i++ {
		s.sampleTarget(tg, i == 0)
	}
	if len(tg.proc.Threads) == 0 || tg.proc.Threads[0].Goroutine() == nil {
		t.Fatalf("no goroutine read: notes %v", tg.proc.Notes)
	}
	if n := tg.runtime.(*goTarget).reader.RefusedWrites(); n < 2 {
		t.Errorf("delve asked for %d writes; it sets at least the unrecovered-panic and fatal-throw breakpoints: is the refusal path exercised?", n)
	}
	after, err := TextSegment(p.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		for i := range before {
			if before[i] != after[i] {
				t.Fatalf("text segment changed at offset %#x: %#x -> %#x", i, before[i], after[i])
			}
		}
	}
	for tid := range mustTasks(t, p.Pid) {
		b, _ := os.ReadFile(taskPath(p.Pid, tid, "status"))
		if !bytes.Contains(b, []byte("\nTracerPid:\t0\n")) {
			t.Errorf("thread %d still traced:\n%s", tid, b)
		}
	}
	t.Logf("%d goroutines, %d OS threads, %d writes refused, %d bytes of text unchanged, %d stops (longest %v)",
		len(tg.proc.Threads), len(tg.proc.OSThreads), tg.runtime.(*goTarget).reader.RefusedWrites(), len(before), s.stops, s.maxHeld)
}

func mustTasks(t *testing.T, pid int) map[int]string {
	t.Helper()
	tasks, err := patient.Tasks(pid)
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// TestGoArgsReadOnly: reading the frame arguments of lock-waiting
// goroutines (delve's FunctionArguments over each frame) asks for no
// write: after the first sample, whose target opening sets delve's
// breakpoints, the refused writes stay as they were while every later
// sample reads the arguments again, and the text segment is unchanged.
func TestGoArgsReadOnly(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.StartGo(t, patient.BuildGo(t, "abba"))
	before, tg := openGoTarget(t, p.Pid)
	opts := Options{Samples: 3}
	opts.defaults()
	s := &sampler{opts: opts, tracer: newTracer()}
	defer func() { s.tracer.close() }()
	s.sampleTarget(tg, true)
	opened := tg.runtime.(*goTarget).reader.RefusedWrites()
	for i := 1; i < opts.Samples; i++ {
		s.sampleTarget(tg, false)
	}
	withArgs := 0
	for _, th := range tg.proc.Threads {
		for _, f := range th.Stack {
			if len(f.Args) > 0 {
				withArgs++
				if th.Goroutine() == nil || th.Goroutine().Status != "sync.Mutex.Lock" {
					t.Errorf("goroutine %d (%+v): arguments read for %s outside a lock wait", th.Tid, th.Goroutine(), f.Func)
				}
			}
		}
	}
	if withArgs != 2 {
		t.Errorf("%d frames with arguments, want the two transfers", withArgs)
	}
	if n := tg.runtime.(*goTarget).reader.RefusedWrites(); n != opened {
		t.Errorf("delve asked for %d writes while reading arguments (%d when the target was opened, %d after)", n-opened, opened, n)
	}
	after, err := TextSegment(p.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the text segment changed")
	}
}

// openGoTarget reads the text segment of the Go patient pid, then opens
// it as Attach does and checks it is on the Go path.
func openGoTarget(t *testing.T, pid int) ([]byte, *target) {
	t.Helper()
	before, err := TextSegment(pid)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := openTarget(pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tg.runtime.(*goTarget); !ok {
		t.Fatalf("the Go patient was not put on the Go path: notes %v", tg.proc.Notes)
	}
	return before, tg
}
