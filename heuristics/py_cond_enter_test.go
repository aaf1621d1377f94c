package heuristics

// `with cond:` in a py-spy dump: threading's Condition.__enter__ as the
// innermost Python frame takes the condition's lock in C, so the thread
// waits for that lock, not to be woken; py-spy's "active" flag, set by
// name when it cannot match the OS thread, does not make it run. The
// dumps are written by hand in py-spy's format, with other programs'
// names than the corpus report the rule was found on (patroni#3413).

import "testing"

func pyspyDump(status, top string) string {
	return "Process 4242: /usr/bin/python3 /srv/app/worker.py\nPython v3.8.10 (/usr/bin/python3.8)\n\n" +
		"Thread 0x7F0000001100 (" + status + "): \"MainThread\"\n" + top +
		"    put (queue.py:132)\n    publish (app/events.py:88)\n    on_tick (app/loop.py:40)\n    <module> (worker.py:12)\n"
}

func TestPyConditionEnterIsLockWait(t *testing.T) {
	enter := "    __enter__ (threading.py:247)\n"
	d, ok := top(parseDump(t, pyspyDump("idle", enter)))
	if !ok || d.ID != "self-deadlock" || d.Confidence != Low {
		t.Fatalf("idle in Condition.__enter__: top %s (%s) %s, want self-deadlock (low)", d.ID, d.Confidence, d.Summary)
	}
	if d, ok := top(parseDump(t, pyspyDump("active", enter))); ok && (d.ID == "progressing" || !d.Deadlock && d.ID != "") {
		t.Errorf("active in Condition.__enter__: %s %s, want no non-deadlock verdict for a lock acquire", d.ID, d.Summary)
	}
	// a Condition's wait (to be woken) is no lock wait
	wait := "    wait (threading.py:302)\n"
	if d, ok := top(parseDump(t, pyspyDump("idle", wait))); ok && d.ID == "self-deadlock" {
		t.Errorf("idle in Condition.wait read as %s: %s", d.ID, d.Summary)
	}
}
