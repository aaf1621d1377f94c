package stacks

import (
	"io"
	"strings"
	"testing"
)

// endless is an input that never ends: its pattern, repeated. It counts
// what was read from it.
type endless struct {
	pattern string
	off     int
	read    int
}

func (e *endless) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = e.pattern[e.off]
		e.off = (e.off + 1) % len(e.pattern)
	}
	e.read += len(b)
	return len(b), nil
}

// An input that is no dump ends the reading with one line that says
// why, after a bounded amount of it, whatever format is forced.
func TestHostileInputsEndBounded(t *testing.T) {
	for _, c := range []struct {
		name, pattern, format, want string
		maxRead                     int
	}{
		{"/dev/zero as gdb", "\x00", "gdb", "binary data (NUL bytes)", 4 << 20},
		{"/dev/zero detected", "\x00", "", "binary data (NUL bytes)", 4 << 20},
		{"/dev/zero as goroutines", "\x00", "goroutines", "binary data (NUL bytes)", 4 << 20},
		{"one endless line", "a", "gdb", "without a line break", 20 << 20},
		{"binary lines", "\x00\x01\x02junk\n", "gdb", "binary data (NUL bytes)", 4 << 20},
		{"thread headers", "Thread 7 (Thread 0x7f0000000000 (LWP 7)):\n", "gdb", "thread headers in a row without a frame", 4 << 20},
		{"thread headers detected", "Thread 7 (Thread 0x7f0000000000 (LWP 7)):\n", "", "thread headers in a row without a frame", 4 << 20},
	} {
		in := &endless{pattern: c.pattern}
		snap, _, _, err := Parse(in, c.format)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: snapshot %v, error %v; want one line saying %q", c.name, snap != nil, err, c.want)
		}
		if in.read > c.maxRead {
			t.Errorf("%s: %d bytes read before it stopped; want at most %d", c.name, in.read, c.maxRead)
		}
	}
}

// A dump followed by binary data keeps the dump, and says the rest was
// not read.
func TestDumpThenBinaryKeepsTheDump(t *testing.T) {
	dump := "Thread 1 (Thread 0x7f0000000000 (LWP 7)):\n#0  0x00007f0000001000 in __lll_lock_wait () from /lib/libc.so.6\n#1  0x0000555555555000 in main () at m.c:3\n"
	r := io.MultiReader(strings.NewReader(dump), io.LimitReader(&endless{pattern: "\x00"}, 64<<20))
	snap, _, _, err := Parse(r, "")
	if err != nil || snap == nil || len(snap.Processes) == 0 || len(snap.Processes[0].Threads) != 1 {
		t.Fatalf("snapshot %v, error %v; want the dump's one thread", snap, err)
	}
	notes := strings.Join(snap.Processes[0].Notes, "\n")
	if !strings.Contains(notes, "input not read to its end") || !strings.Contains(notes, "binary data") {
		t.Errorf("notes %q do not say the input was cut", notes)
	}
}

// A goroutine header of 70-80 columns is not a frame a mail client
// wrapped: the frame under it stays its own line (goroutine ids of three
// digits and more with GOTRACEBACK=system headers were read as one line
// and skipped).
func TestLongGoroutineHeaderIsNotWrapped(t *testing.T) {
	in := "goroutine 100 gp=0xc67aac741e0 m=nil [sync.WaitGroup.Wait, 2 minutes]:\n" +
		"runtime.gopark(0xc67aad0ae78?, 0x499782?, 0x50?, 0x61?, 0xc67aad12cf0?)\n" +
		"\t/usr/local/go/src/runtime/proc.go:462 +0xce fp=0xc67aad0ae18 sp=0xc67aad0adf8 pc=0x47de6e\n" +
		"main.main()\n\t/tmp/m/main.go:9 +0x1b\n"
	snap, skipped, _, err := Parse(strings.NewReader(in), "")
	if err != nil || len(skipped) != 0 || len(snap.Processes) != 1 || len(snap.Processes[0].Threads) != 1 {
		t.Fatalf("snapshot %v, skipped %v, err %v", snap, skipped, err)
	}
	if th := snap.Processes[0].Threads[0]; th.Tid != 100 || len(th.Stack) != 2 || th.Stack[0].Func != "runtime.gopark" {
		t.Errorf("goroutine %d, stack %+v", th.Tid, th.Stack)
	}
}
