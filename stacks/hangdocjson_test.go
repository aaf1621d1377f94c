package stacks

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testdata/dumps/hangdoc-json: pyfork_lock_attach.json is the real output
// of `hangdoc attach --format json --samples 2 --interval 200ms PARENT
// CHILD` on testdata/patients/pyfork_lock.py; pasted_issue.md holds the
// real output of `hangdoc attach --format json --samples 1` on lock.py in a
// ```json fence, pasted_quoted_cut.md the start of it quoted with "> " and
// cut mid-line; schema_v2.json is that output with its schema renamed.

func TestParseHangdocJSONGolden(t *testing.T) {
	checkDumpGoldens(t, "hangdoc-json", ParseHangdocJSON, 0)
}

// reportDocument has the shape of report.Document (stacks does not import
// report): the snapshot's fields, and diagnoses beside them.
type reportDocument struct {
	*Snapshot
	Diagnoses []map[string]any `json:"diagnoses"`
}

func fullSnapshot() *Snapshot {
	v := uint32(2)
	return &Snapshot{
		Schema:   Schema,
		Source:   "attach",
		Taken:    time.Date(2024, 5, 14, 10, 12, 33, 412000000, time.UTC),
		Samples:  3,
		Interval: Duration(200 * time.Millisecond),
		Evidence: Evidence{Owners: true, CPU: true, Syscalls: true, Lineage: true, Arguments: true},
		Processes: []*Process{{
			Pid: 100, PPid: 1, Exe: "/usr/bin/python3.11", Cmdline: []string{"python3", "x.py"}, State: "S",
			Modules:  []Module{{Path: "/lib/libc.so.6", Start: 0x7f0000000000, End: 0x7f0000200000, Bias: 0x7f0000000000, BuildID: "abcd"}},
			Notes:    []string{"a note"},
			Exited:   true,
			Fork:     &Fork{ParentPid: 1, ParentThreads: []int{1, 2}, ParentModules: []string{"/usr/lib/libcuda.so.1"}},
			Children: []int{101},
			Label:    "rank 3",
			Threads: []*Thread{{
				Tid: 100, Name: "python3", State: "S", CPU: 12.5,
				Stack: []Frame{
					{Func: "futex_wait", Module: "/lib/libc.so.6", Offset: 0x1234, PC: 0x7f0000001234, File: "futex.c", Line: 12, Inlined: true},
					{Signal: true},
					{Func: "take_lock", Args: []Arg{NewArg("m", "0x5555 <lock>")}, Samples: 3},
				},
				Wait: &Wait{Syscall: "futex", Nr: 202, Addr: 0x5555, Op: "FUTEX_WAIT_PRIVATE", Fd: 3, Wchan: "futex_wait_queue",
					FdTarget: "pipe:[1]", Mutex: &Mutex{Addr: 0x5555, Lock: 2, Owner: 101, Kind: 0, Symbol: "lock"},
					JoinTid: 7, Value: &v, BlockedByTid: 9, BlockedByPid: 8},
				Notes: []string{"n"},
				ThreadRare: &ThreadRare{HandleID: 0x7f00,
					SampleList: []Sample{{State: "S", CPUTicks: 1, Stack: []Frame{{Func: "f"}}, Wait: &Wait{Syscall: "read", Nr: 0}}}},
				Runtime: PythonHoldingGIL(),
			}, {Tid: 101, Name: "empty", Stack: []Frame{}}, {Tid: 7, Name: "goroutine 7", Stack: []Frame{{Func: "sync.(*Mutex).Lock"}},
				Runtime: &RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "sync.Mutex.Lock", WaitMinutes: 3, LockedToThread: true,
					CreatedBy: Frame{Func: "main.main", File: "m.go", Line: 9}, CreatedByID: 1, Object: 0xc000010000}}},
		}},
	}
}

func TestParseHangdocJSONRoundTrip(t *testing.T) {
	want := fullSnapshot()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	diags := []map[string]any{{"id": "self-deadlock", "title": "x", "tids": []int{100}}}
	if err := enc.Encode(reportDocument{Snapshot: want, Diagnoses: diags}); err != nil {
		t.Fatal(err)
	}
	got, skipped, err := ParseHangdocJSON(bytes.NewReader(buf.Bytes()))
	if err != nil || len(skipped) != 0 {
		t.Fatalf("err %v skipped %v", err, skipped)
	}
	if !reflect.DeepEqual(got, want) {
		a, _ := json.MarshalIndent(got, "", " ")
		b, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("round trip differs\n%s", firstLineDiff(string(b), string(a)))
	}
	// and through detection
	snap, _, name, err := Parse(bytes.NewReader(buf.Bytes()), "")
	if err != nil || name != "hangdoc-json" || !reflect.DeepEqual(snap, want) {
		t.Errorf("Parse: format %q err %v", name, err)
	}
}

func TestParseHangdocJSONAttach(t *testing.T) {
	snap, skipped := parseStoredDump(t, "hangdoc-json", "pyfork_lock_attach.json", ParseHangdocJSON)
	if len(skipped) != 0 || snap.Source != "attach" || snap.Samples != 2 || len(snap.Processes) != 2 {
		t.Fatalf("skipped %v source %q samples %d processes %d", skipped, snap.Source, snap.Samples, len(snap.Processes))
	}
	child := snap.Processes[1]
	if child.Fork == nil || child.Fork.ParentPid != snap.Processes[0].Pid || !snap.Evidence.Owners {
		t.Errorf("child fork %+v evidence %+v", child.Fork, snap.Evidence)
	}
	// what was read is what was written, diagnoses aside
	b := readStoredDump(t, "hangdoc-json", "pyfork_lock_attach.json")
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "diagnoses")
	again, _ := json.Marshal(snap)
	var back map[string]json.RawMessage
	if err := json.Unmarshal(again, &back); err != nil {
		t.Fatal(err)
	}
	// Field by field, as the model reads them: an older hangdoc wrote
	// unknown values as zeros ("ppid": 0, "cpu": 0), today's leaves them
	// out; both read the same.
	for k, v := range doc {
		var a, b Snapshot
		json.Unmarshal([]byte(`{"`+k+`":`+string(v)+`}`), &a)
		json.Unmarshal([]byte(`{"`+k+`":`+string(back[k])+`}`), &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("field %q changed in the round trip", k)
		}
	}
}

func TestParseHangdocJSONPasted(t *testing.T) {
	snap, skipped := parseStoredDump(t, "hangdoc-json", "pasted_issue.md", ParseHangdocJSON)
	checkSkipped(t, skipped, "line 1 skipped: not hangdoc JSON", "line 608 skipped: not hangdoc JSON")
	if len(snap.Processes) != 1 || len(snap.Processes[0].Threads) != 2 {
		t.Errorf("processes %+v", snap.Processes)
	}

	snap, _, err := ParseHangdocJSON(bytes.NewReader(readStoredDump(t, "hangdoc-json", "pasted_quoted_cut.md")))
	if snap != nil || err == nil || err.Error() != "line 121: hangdoc JSON: the document is cut short" {
		t.Errorf("cut: %v", err)
	}
}

func TestParseHangdocJSONErrors(t *testing.T) {
	v2 := readStoredDump(t, "hangdoc-json", "schema_v2.json")
	checkParseErrors(t, ParseHangdocJSON, []errorCase{
		{string(v2), "line 2: schema hangdoc/v2: this hangdoc reads hangdoc/v1; upgrade hangdoc"},
		{`{"schema": "hangdoc/v2", "processes": "changed"}`, "line 1: schema hangdoc/v2: this hangdoc reads hangdoc/v1; upgrade hangdoc"},
		{"{\n  \"schema\": \"hangdoc/v1\",\n  \"processes\": 3\n}", "line 3: hangdoc JSON: processes: json: cannot unmarshal number into Go struct field Snapshot.processes of type []*stacks.Process"},
		{"{\n  \"schema\": \"hangdoc/v1\",\n  \"processes\": [\n", "line 3: hangdoc JSON: the document is cut short"},
		{"{\"samples\": 1}", `line 1: not hangdoc JSON: no "schema" field`},
		{"{\"schema\": \"hangdoc/v1\", \"processes\": [null]}", "line 1: hangdoc JSON: a process is null"},
		{"{\n\"schema\": \"hangdoc/v1\",\n,}", "line 3: hangdoc JSON: invalid character ',' looking for beginning of object key string"},
		{"", "empty input: no hangdoc JSON"},
		{"some prose\n", `line 1: not hangdoc JSON: no object ("{\"schema\": \"hangdoc/v1\", …}")`},
	})
	// a hangdoc/v2 document is still detected as hangdoc JSON, so the
	// user reads why it is refused
	if _, _, name, err := Parse(bytes.NewReader(v2), ""); name != "hangdoc-json" || err == nil || !strings.Contains(err.Error(), "upgrade hangdoc") {
		t.Errorf("v2: format %q err %v", name, err)
	}
}

func FuzzParseHangdocJSON(f *testing.F) {
	fuzzDumps(f, "hangdoc-json", ParseHangdocJSON, nil,
		`{"schema": "hangdoc/v1", "processes": [{"threads": [null]}]}`,
		"x\n> {\"schema\": \"hangdoc/v1\",\n> \"processes\": [{\"threads\": [{}]}]}\ny\n",
	)
}

func TestParseHangdocJSONLinearTime(t *testing.T) {
	thread := `{"tid": 1, "stack": [{"func": "f"}]},`
	checkDumpLinear(t, ParseHangdocJSON, map[string]string{
		"threads": `{"schema": "hangdoc/v1", "processes": [{"threads": [` + strings.Repeat(thread, 30000) + `{"tid": 2}]}]}`,
		"nested":  `{"schema": "hangdoc/v1", "x": ` + strings.Repeat("[", 200000),
		"pasted":  "prose\n```json\n{\"schema\": \"hangdoc/v1\", \"processes\": [{\"threads\": [\n" + strings.Repeat(thread+"\n", 30000) + "{}]}]}\n```\n",
		"braces":  "x\n{\n" + strings.Repeat("{\n", 200000),
		"prose":   strings.Repeat("zz\n\n", 100000),
	}, map[string]bool{"threads": true, "pasted": true, "nested": false, "prose": false}, linearBound)
}
