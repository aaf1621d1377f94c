package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// TestCallbackDispatchRelock: re-entry through a synchronous callback
// dispatch (hand-built frames of Qt's QMetaObject::activate / doActivate
// and GLib's g_signal_emit): a guard below the dispatch was called with
// the mutex the slot waits for above it: self-deadlock from the stack
// (medium), whatever the dispatch's frames. Silent (no such claim): the
// outer guard was given another mutex.
func TestCallbackDispatchRelock(t *testing.T) {
	stacksOf := map[string][]string{
		"qt": {"syscall", "QBasicMutex::lockInternal", "QMutex::lock", "QMutexLocker<QMutex>::QMutexLocker",
			"Model::onChanged", "QtPrivate::QSlotObjectBase::call", "doActivate<false>", "QMetaObject::activate", "Model::changed",
			"QMutexLocker<QMutex>::QMutexLocker", "Model::setValue", "main"},
		"glib": {"syscall", "g_mutex_lock_slowpath", "g_mutex_lock", "on_notify", "g_closure_invoke", "signal_emit_unlocked_R",
			"g_signal_emit_valist", "g_signal_emit", "obj_set_value", "g_mutex_lock", "obj_update", "main"},
	}
	inner := map[string]int{"qt": 3, "glib": 2}
	outer := map[string]int{"qt": 9, "glib": 9}
	for name, fs := range stacksOf {
		for _, same := range []bool{true, false} {
			th := thread(1001, "main", fs...)
			th.Stack[inner[name]].Args = []stacks.Arg{stacks.NewArg("mutex", "0x5566aa10")}
			other := "0x5566aa10"
			if !same {
				other = "0x5566ab40"
			}
			th.Stack[outer[name]].Args = []stacks.Arg{stacks.NewArg("mutex", other)}
			var got *Diagnosis
			for _, d := range Diagnose(pasted(proc(1000, th)), Options{}).Diagnoses {
				if d.ID == "self-deadlock" && strings.Contains(d.Summary, "outer frame") {
					got = &d
					break
				}
			}
			if same && (got == nil || got.Confidence != Medium) {
				t.Errorf("%s: no stack re-lock through the dispatch", name)
			}
			if !same && got != nil {
				t.Errorf("%s, another outer mutex: %s", name, got.Summary)
			}
		}
	}
}
