package stacks

import (
	"strings"
	"testing"
)

func TestCoredumpGoldens(t *testing.T) {
	checkDumpGoldens(t, "systemd-coredump", ParseCoredump, 0)
}

// TestCoredumpThreads: the kernel's thread ids, frames with their
// module and offset (or none before systemd v246), "n/a" read as no
// symbol, a frame cut mid-line kept with its address and noted, the
// frames of an excerpt that starts mid-thread kept under a thread with
// no id and noted.
func TestCoredumpThreads(t *testing.T) {
	snap, _ := parseStoredDump(t, "systemd-coredump", "libvirt_bots_1350_excerpt.txt", ParseCoredump)
	ths := snap.Processes[0].Threads
	if len(ths) != 4 || ths[0].Tid != 1876 || len(ths[0].Stack) != 8 || ths[3].Tid != 1225 || len(ths[3].Stack) != 2 {
		t.Fatalf("threads %+v", ths)
	}
	if f := ths[0].Stack[0]; f.Func != "__GI___pthread_mutex_lock" || f.Module != "libpthread.so.0" || f.PC != 0x7f3c8552e6c0 {
		t.Errorf("frame 0 %+v", f)
	}
	if f := ths[0].Stack[2]; f.Func != "" || f.Module != "libvirt_driver_qemu.so" {
		t.Errorf("n/a frame %+v", f)
	}
	if n := strings.Join(ths[3].Notes, "|"); !strings.Contains(n, "frame #1 cut mid-way") {
		t.Errorf("cut thread notes %q", ths[3].Notes)
	}
	snap, _ = parseStoredDump(t, "systemd-coredump", "varnish_4121_threads_excerpt.txt", ParseCoredump)
	ths = snap.Processes[0].Threads
	if len(ths) != 2 || ths[0].Tid != 0 || len(ths[0].Stack) != 5 || ths[1].Tid != 2168492 || len(ths[1].Stack) != 5 {
		t.Fatalf("threads %+v", ths)
	}
	if f := ths[1].Stack[2]; f.Func != "Lck_CondWaitUntil" || f.Module != ".varnishd-wrapped" || f.Offset != 0x45584 {
		t.Errorf("frame 2 %+v", f)
	}
	if n := strings.Join(ths[0].Notes, "|"); !strings.Contains(n, "starts inside a thread's stack") || !strings.Contains(n, "frames #0–#1 not in the dump") {
		t.Errorf("headless thread notes %q", ths[0].Notes)
	}
}

// TestCoredumpDetected: a coredump paste is read as one, not as
// eu-stack (whose frames also start "#0  0x…"), without --input-format,
// journal prefixes and all; coredumpctl info's header gives the pid, the
// executable and the signal, and a second entry is a second process.
func TestCoredumpDetected(t *testing.T) {
	for _, name := range []string{"libvirt_bots_1350_excerpt.txt", "varnish_4121_threads_excerpt.txt"} {
		snap, _, format, err := Parse(strings.NewReader(string(readStoredDump(t, "systemd-coredump", name))), "")
		if err != nil || format != "systemd-coredump" || len(snap.Processes) != 1 {
			t.Errorf("%s: format %q, %v", name, format, err)
		}
	}
	in := `Dec 01 10:00:00 host systemd-coredump[99]: [🡕] Process 4711 (server) of user 0 dumped core.
                                              
                                              Stack trace of thread 4712:
                                              #0  0x00007f0000001000 __lll_lock_wait (libc.so.6 + 0x1000)
                                              #1  0x00007f0000002000 pthread_mutex_lock (libc.so.6 + 0x2000)
                                              #2  0x0000555555555000 worker (server + 0x1000)
           PID: 4800 (client)
        Signal: 6 (ABRT)
    Executable: /usr/bin/client
    Stack trace of thread 4800:
    #0  0x00007f0000001000 n/a (libc.so.6 + 0x1000)
    #1  0x0000555555555000 main (client + 0x1000)
`
	snap, skipped, format, err := Parse(strings.NewReader(in), "")
	if err != nil || format != "systemd-coredump" || len(skipped) != 0 {
		t.Fatalf("format %q, skipped %v, %v", format, skipped, err)
	}
	if len(snap.Processes) != 2 {
		t.Fatalf("%d processes", len(snap.Processes))
	}
	a, b := snap.Processes[0], snap.Processes[1]
	if a.Pid != 4711 || a.Exe != "server" || len(a.Threads) != 1 || a.Threads[0].Tid != 4712 || len(a.Threads[0].Stack) != 3 {
		t.Errorf("first %+v", a)
	}
	if b.Pid != 4800 || b.Exe != "/usr/bin/client" || b.Message != "dumped core on signal 6 (ABRT)" || len(b.Threads) != 1 {
		t.Errorf("second %+v", b)
	}
}

func TestCoredumpBadInput(t *testing.T) {
	for _, in := range []string{"", "Stack trace of thread 5:\n", "hello\n", string(readStoredDump(t, "systemd-coredump", "varnish_4121_journal_head.txt"))} {
		if _, _, err := ParseCoredump(strings.NewReader(in)); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func FuzzParseCoredump(f *testing.F) {
	fuzzDumps(f, "systemd-coredump", ParseCoredump, nil,
		"Stack trace of thread 1:\n#0  0x1 n/a (a + 0x1)\n#1  0x2 f (b)\n#3  0x3 g (c +\nStack trace of thread 1:\n")
}
