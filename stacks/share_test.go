package stacks

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The regexps the hand-written gdb header readers replaced (a large dump
// has a header a thread, and these ran several times on each): the
// readers must give what they gave on every line of every stored dump
// and on the variants below.
var (
	specHeaderRE = regexp.MustCompile(`^Thread (\d+(?:\.\d+)?) \((.*)\):$`)
	specBeginRE  = regexp.MustCompile(`^Thread (\d+)(?:\.\d+)? \((?:Thread 0x[0-9a-fA-F]+ \(LWP \d+\)|LWP \d+|process \d+)[^()]*\):$`)
	specNameRE   = regexp.MustCompile(`"(.*)"`)
)

func TestGDBHeaderReadersMatchTheirRegexps(t *testing.T) {
	lines := []string{
		`Thread 3 (Thread 0x7f3c2a1fe640 (LWP 4242) "worker"):`,
		`Thread 3 (Thread 0x7f3c2a1fe640 (LWP 4242)):`,
		`Thread 2.1 (Thread 0x7f3c2a1fe640 (LWP 4242) "a (b)"):`,
		`Thread 2. (LWP 5):`, `Thread 12 (LWP 77):`, `Thread 1 (process 9):`, `Thread 1 (process ):`,
		`Thread 1 (Thread 0x (LWP 1)):`, `Thread 1 (Thread 0xzz (LWP 1)):`, `Thread 1 (Thread 0x1 (LWP 1) x):`,
		`Thread 1 (Thread 0x1 (lwp 1)):`, `Thread 1 ():`, `Thread 1 (:`, `Thread  1 (LWP 1):`, `Thread 1 (LWP 1) :`,
		`Thread 7 (Thread 0x7f (LWP 8) "q"uote"):`, `Thread 4 (LWP 1 (LWP 2)):`, `Thread 0x1 (LWP 3):`,
	}
	_ = filepath.WalkDir(filepath.Join("..", "testdata"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".json") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "Thread ") {
				lines = append(lines, l)
			}
		}
		return nil
	})
	if len(lines) < 150 {
		t.Fatalf("only %d header lines found under testdata", len(lines))
	}
	for _, l := range lines {
		no, inside, ok := gdbHeader(l)
		m := specHeaderRE.FindStringSubmatch(l)
		if ok != (m != nil) || ok && (no != m[1] || inside != m[2]) {
			t.Errorf("gdbHeader(%q) = %q, %q, %v; the regexp: %q", l, no, inside, ok, m)
		}
		bno, bok := gdbBeginNo(l)
		bm := specBeginRE.FindStringSubmatch(l)
		if bok != (bm != nil) || bok && bno != bm[1] {
			t.Errorf("gdbBeginNo(%q) = %q, %v; the regexp: %q", l, bno, bok, bm)
		}
		if !ok {
			continue
		}
		tid, name := parseLWP(inside)
		wantTid, wantName := 0, ""
		if m := lwpRE.FindStringSubmatch(inside); m != nil {
			v := m[1]
			if v == "" {
				v = m[2]
			}
			wantTid, _ = strconv.Atoi(v)
		}
		if m := specNameRE.FindStringSubmatch(inside); m != nil {
			wantName = m[1]
		}
		if tid != wantTid || name != wantName {
			t.Errorf("parseLWP(%q) = %d, %q; the regexps: %d, %q", inside, tid, name, wantTid, wantName)
		}
	}
}

// Threads with equal stacks share one []Frame; a different stack does
// not, and appending to a shared stack copies it.
func TestStackTableShares(t *testing.T) {
	var tab stackTable
	mk := func(fn string) []Frame {
		return append(make([]Frame, 0, 8), Frame{Func: fn, Line: 3, Args: []Arg{NewArg("m", "0x1")}}, Frame{Func: "main"})
	}
	a := tab.share(mk("lock"), false)
	b := tab.share(mk("lock"), false)
	c := tab.share(mk("wait"), false)
	if &a[0] != &b[0] {
		t.Error("equal stacks do not share")
	}
	if &a[0] == &c[0] || c[0].Func != "wait" {
		t.Error("different stacks share")
	}
	d := append(b, Frame{Func: "x"})
	if &d[0] == &a[0] || len(a) != 2 {
		t.Error("append wrote into the shared stack")
	}
	withArg := mk("lock")
	withArg[0].Args = []Arg{NewArg("m", "0x2")}
	if e := tab.share(withArg, true); &e[0] == &a[0] {
		t.Error("stacks that differ in an argument share")
	}
}

// A frame text is parsed once; the memo keeps its own copy of the text.
func TestMemoParsesOnce(t *testing.T) {
	var m memo[string]
	calls := 0
	parse := func(s string) string { calls++; return s[:3] }
	line := []byte("abcdef")
	v1 := m.get(string(line), parse)
	line[0] = 'X'
	v2 := m.get("abcdef", parse)
	if calls != 1 || v1 != "abc" || v2 != "abc" {
		t.Errorf("calls %d, %q %q", calls, v1, v2)
	}
}

// Stacks that differ only in an argument each get a bucket of their
// own: 20,000 of them share in linear time, not one bucket searched
// 20,000 times.
func TestStackTableArgsSpread(t *testing.T) {
	var tab stackTable
	for i := range 20000 {
		st := []Frame{{Func: "runtime.gopark"}, {Func: "main.worker", Args: []Arg{NewArg("ch", "0x"+strconv.Itoa(i))}}}
		tab.share(st, false)
	}
	most := 0
	for _, b := range tab.m {
		most = max(most, len(b))
	}
	if most > 2 {
		t.Errorf("a bucket holds %d stacks", most)
	}
}

// A dump that prints each goroutine of a stored dump three times, under
// fresh ids, as a pool does: the copies share one RuntimeThread (and one
// stack), and each goroutine's facts are what it has read alone.
func TestGoroutinesShareRuntime(t *testing.T) {
	for _, name := range []string{"abba_sigquit.txt", "leak_sigquit.txt", "abba_sigquit_system.txt", "go119_abba_sigquit.txt"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", "goroutines", name))
		if err != nil {
			t.Fatal(err)
		}
		var blocks []string
		for _, blk := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n\n") {
			if strings.HasPrefix(blk, "goroutine ") && !strings.HasPrefix(blk, "goroutine 0 ") {
				blocks = append(blocks, blk[strings.IndexByte(blk[len("goroutine "):], ' ')+len("goroutine "):])
			}
		}
		var big strings.Builder
		alone := map[int]*Thread{}
		id := 1
		for _, blk := range blocks {
			snap, _, err := ParseGoroutines(strings.NewReader("goroutine 1" + blk + "\n"))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for range 3 {
				alone[id] = snap.Processes[0].Threads[0]
				big.WriteString("goroutine " + strconv.Itoa(id) + blk + "\n\n")
				id++
			}
		}
		snap, _, err := ParseGoroutines(strings.NewReader(big.String()))
		if err != nil {
			t.Fatal(err)
		}
		threads := snap.Processes[0].Threads
		if len(threads) != len(alone) || len(threads) < 6 {
			t.Fatalf("%s: %d goroutines, want %d", name, len(threads), len(alone))
		}
		for i, th := range threads {
			a := alone[th.Tid]
			if a == nil || !reflect.DeepEqual(*th.Goroutine(), *a.Goroutine()) || !reflect.DeepEqual(th.Stack, a.Stack) {
				t.Fatalf("%s: goroutine %d: %+v, read alone %+v", name, th.Tid, th.Goroutine(), a)
			}
			if i%3 > 0 && (th.Runtime != threads[i-1].Runtime || &th.Stack[0] != &threads[i-1].Stack[0]) {
				t.Errorf("%s: goroutine %d does not share the runtime facts or stack of its copy %d", name, th.Tid, threads[i-1].Tid)
			}
		}
	}
}
