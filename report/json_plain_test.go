package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// plainThread writes the bytes encoding/json and json.Indent write, for
// every field it takes on, and leaves to them every thread it cannot
// write so (hand-made threads: each field's edge cases).
func TestPlainThreadWritesTheEncodersBytes(t *testing.T) {
	stack := []stacks.Frame{{Func: "__futex_abstimed_wait_common", File: "futex-internal.c", Line: 57}, {Func: "start_thread", PC: 0x7f00}}
	threads := []*stacks.Thread{
		{Tid: 1, Name: "main", Stack: stack, Number: "1"},
		{Tid: 2, Name: "", State: "S", Stack: stack},
		{Tid: 3, Name: "w", CPU: 12.5, Stack: stack, Notes: []string{"line 4: thread header cut"}, Number: "2.1"},
		{Tid: 4, CPU: 1e-7, Stack: stack, Notes: []string{"a", "b"}},
		{Tid: 5, CPU: 3e21, Stack: stack},
		{Tid: 6, CPU: 0.1 + 0.2, Stack: stack},
		{Tid: -7, CPU: -2.5e-9, Stack: stack},
		// not plain: written by encoding/json
		{Tid: 8, Name: "a<b>&c", Stack: stack},
		{Tid: 9, Name: "na\u00efve", Stack: stack},
		{Tid: 10, Name: "c1\u0085", Stack: stack},
		{Tid: 11, Name: `q"uote\`, Stack: stack},
		{Tid: 12, Stack: stack, Notes: []string{"fine", "tab\there"}},
		{Tid: 13, Stack: stack, ThreadRare: &stacks.ThreadRare{HandleID: 0x7f12}},
		{Tid: 14, Stack: stack, Wait: &stacks.Wait{Syscall: "futex", Nr: 202}},
		{Tid: 15, Stack: stack, Runtime: stacks.PythonHoldingGIL()},
		{Tid: 16, Stack: stack, ThreadRare: &stacks.ThreadRare{SampleList: []stacks.Sample{{State: "S", Stack: stack}}}},
		{Tid: 17, Stack: stack, Number: "del\x7f"},
	}
	plain := 7 // the first seven
	snap := &stacks.Snapshot{Schema: stacks.Schema, Source: "gdb", Processes: []*stacks.Process{{Pid: 1, Threads: threads}}}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Document{Snapshot: snap, Diagnoses: []heuristics.Diagnosis{}}); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := JSON(&got, &heuristics.Result{Snap: snap}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), escapeControls(want.Bytes())) {
		t.Errorf("streamed JSON differs from the encoder's:\n got %s\nwant %s", got.String(), want.String())
	}
	for i, th := range threads {
		j := &jsonStream{w: bufio.NewWriter(&bytes.Buffer{})}
		if ok := j.plainThread(th, 4, []byte("[]")); ok != (i < plain) {
			t.Errorf("thread %d: plainThread says %v", th.Tid, ok)
		}
	}
}
