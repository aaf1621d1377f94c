package stacks

import (
	"slices"
	"testing"
)

func TestJstackGoldens(t *testing.T) { checkDumpGoldens(t, "jstack", ParseJstack, 0) }

// TestJstackOwners: every lock wait of the patient's dumps names its
// owner: a monitor by "- locked", a ReentrantLock by the ownable
// synchronizers (jstack -l) or the deadlock summary (jstack), a class
// being initialised by the thread in its <clinit>. The waits are the
// threads' Java facts (Runtime), not native waits.
func TestJstackOwners(t *testing.T) {
	for _, name := range []string{"monitor_abba.txt", "jcmd_thread_print_monitor.txt", "reentrant_abba.txt", "reentrant_abba_l.txt", "clinit_cycle.txt", "summary_only_pasted.txt"} {
		snap, _ := parseStoredDump(t, "jstack", name, ParseJstack)
		p := snap.Processes[0]
		waits := 0
		for _, th := range p.Threads {
			if th.Runtime == nil || th.Runtime.Kind != KindJava || th.Wait != nil {
				t.Fatalf("%s: thread %q: Java facts %+v, native wait %+v", name, th.Name, th.Runtime, th.Wait)
			}
			w := th.Runtime.LockWait()
			if w == nil {
				continue
			}
			waits++
			owner := w.Mutex.Owner
			if owner == 0 || owner == th.Tid {
				t.Errorf("%s: thread %q waits for %#x with owner %d", name, th.Name, w.Mutex.Addr, owner)
			}
			// jstack without -l lists no ownable synchronizers: the summary names the owner
			if o := threadByTid(t, p, owner); !slices.Contains(o.Runtime.Held, w.Mutex.Addr) && name != "summary_only_pasted.txt" && name != "reentrant_abba.txt" {
				t.Errorf("%s: owner %d of %#x does not hold it", name, owner, w.Mutex.Addr)
			}
		}
		if waits != 2 {
			t.Errorf("%s: %d lock waits, want 2", name, waits)
		}
	}
	snap, _ := parseStoredDump(t, "jstack", "jcmd_thread_print_monitor.txt", ParseJstack)
	if snap.Processes[0].Pid == 0 || snap.Processes[0].Runtime == "" {
		t.Errorf("jcmd: pid %d runtime %q", snap.Processes[0].Pid, snap.Processes[0].Runtime)
	}
}

func FuzzParseJstack(f *testing.F) {
	fuzzDumps(f, "jstack", ParseJstack, nil,
		"\"a\" #1 prio=5 tid=0x1 nid=0x2 waiting\n\tat A.b(A.java:1)\n\t- waiting to lock <0x1> (a X)\n",
		"Found one Java-level deadlock:\n\"a\":\n  waiting to lock monitor 0x1 (object 0x2, a X),\n  which is held by \"b\"\n")
}
