package python

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

func TestRead311(t *testing.T) {
	l := layout311
	m := newImage(1 << 20)
	runtime := m.alloc(t, 1024)
	interp := m.alloc(t, 512)
	m.put64(runtime+l.runtimeInterpHead, interp)
	m.put64(runtime+l.runtimeInterpHead+8, interp) // interpreters.main
	ts := m.buildThreads(t, &l, interp, twoThreads)
	gil := runtime + l.gil.off
	m.put64(gil, 5000)
	m.put64(gil+gilHolderOff, ts[1])
	m.put32(gil+gilLockedOff, 1)

	st, err := Read(m, runtime, MakeVersion(3, 11, 2))
	if err != nil {
		t.Fatal(err)
	}
	checkTwoThreads(t, st, ts)
	if len(st.GILWait) != 1 || st.GILWait[0] != [2]uint64{gil + 32, gil + 32 + 48} {
		t.Errorf("GILWait %#x, want the cond at %#x", st.GILWait, gil+32)
	}

	// A released GIL names no holder even though last_holder stays set.
	m.put32(gil+gilLockedOff, 0)
	st, err = Read(m, runtime, MakeVersion(3, 11, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range st.Threads {
		if th.HoldsGIL {
			t.Errorf("thread %d holds a released GIL", th.OSTid)
		}
	}
}

// TestRead312 lays out 3.12's structures: GIL behind interp->ceval.gil
// (pointing at interp->_gil), CSTACK shim frames between evaluator calls,
// strings without wstr. The pointer is where the 3.12.0 table says, or,
// for a build that moved it, elsewhere in the interpreter. The switch
// interval is the default 5 ms or sys.setswitchinterval(1000)'s 10^9 us
// (the live 3.12.1 py_stacks_gil.py patient showed that a bound on it
// lost the GIL).
func TestRead312(t *testing.T) {
	for _, c := range []struct{ cevalGIL, interval uint64 }{
		{layout312.gil.off, 5000}, {0x1e0, 5000}, {layout312.gil.off, 1e9}, {0x1e0, 1e9},
	} {
		cevalGIL := c.cevalGIL
		t.Run(fmt.Sprintf("ceval.gil at %#x, interval %d", cevalGIL, c.interval), func(t *testing.T) {
			l := layout312
			m := newImage(1 << 20)
			runtime := m.alloc(t, 1024)
			interp := m.alloc(t, 16<<10)
			m.put64(runtime+l.runtimeInterpHead, interp)
			ts := m.buildThreads(t, &l, interp, twoThreads)
			const ownGIL = 0x2c40
			m.put64(interp+cevalGIL, interp+ownGIL)
			m.put64(interp+ownGIL, c.interval)
			m.put64(interp+ownGIL+gilHolderOff, ts[1])
			m.put32(interp+ownGIL+gilLockedOff, 1)

			r, err := NewReader(m, runtime, MakeVersion(3, 12, 4))
			if err != nil {
				t.Fatal(err)
			}
			st, err := r.Read()
			if err != nil {
				t.Fatal(err)
			}
			checkTwoThreads(t, st, ts)
			if r.gil312 != cevalGIL {
				t.Errorf("interp->ceval.gil found at %#x, want %#x", r.gil312, cevalGIL)
			}
			if len(st.GILWait) != 1 || st.GILWait[0][0] != interp+ownGIL+32 {
				t.Errorf("GILWait %#x, want the cond at %#x", st.GILWait, interp+ownGIL+32)
			}
			if !st.GIL || st.GILErr != nil {
				t.Errorf("GIL %v, GILErr %v", st.GIL, st.GILErr)
			}
		})
	}
	// No GIL anywhere: the state says why.
	l := layout312
	m := newImage(1 << 20)
	runtime := m.alloc(t, 1024)
	interp := m.alloc(t, 16<<10)
	m.put64(runtime+l.runtimeInterpHead, interp)
	m.buildThreads(t, &l, interp, twoThreads)
	st, err := Read(m, runtime, MakeVersion(3, 12, 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.GIL || st.GILErr == nil || !strings.Contains(st.GILErr.Error(), "interp->ceval.gil") {
		t.Errorf("no GIL in the image: GIL %v, GILErr %v", st.GIL, st.GILErr)
	}
}

// debugTable writes a _Py_DebugOffsets table in the field order of names
// with the given values (others zero).
func debugTable(names []string, version Version, vals map[string]uint64) []byte {
	b := make([]byte, len(names)*8)
	copy(b, DebugCookie)
	for i, n := range names {
		if i == 0 {
			continue
		}
		v := vals[n]
		if n == "version" {
			v = uint64(version)
		}
		binary.LittleEndian.PutUint64(b[i*8:], v)
	}
	return b
}

// debugValues are offsets for a made-up 3.13+ build, different from
// every table so that only the debug offsets can make the test pass.
var debugValues = map[string]uint64{
	"rt.size": 0x1000, "rt.interpreters_head": 0x3a0,
	"is.size": 0x4000, "is.next": 0x8, "is.threads_head": 0x58,
	"is.gil_runtime_state": 0x1200, "is.gil_runtime_state_locked": 0x1210, "is.gil_runtime_state_holder": 0x1208,
	"ts.size": 0x300, "ts.next": 0x10, "ts.current_frame": 0x68, "ts.thread_id": 0xb0, "ts.native_thread_id": 0xb8,
	"fr.size": 0x50, "fr.previous": 0x8, "fr.executable": 0x0, "fr.instr_ptr": 0x38, "fr.owner": 0x4a,
	"co.size": 0xe0, "co.filename": 0x78, "co.name": 0x80, "co.qualname": 0x88, "co.linetable": 0x90, "co.firstlineno": 0x44, "co.co_code_adaptive": 0xd0,
	"by.size": 0x28, "by.ob_size": 0x10, "by.ob_sval": 0x20,
	"un.size": 0x48, "un.state": 0x20, "un.length": 0x10, "un.asciiobject_size": 0x28,
}

func TestReadDebugOffsets(t *testing.T) {
	for _, c := range []struct {
		name    string
		version Version
		names   []string
	}{
		{"3.13", MakeVersion(3, 13, 1), debug313},
		{"3.14", MakeVersion(3, 14, 0), debug314},
		{"3.15 (read with 3.14's order)", MakeVersion(3, 15, 0) &^ 0xff, debug314},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newImage(1 << 20)
			runtime := m.alloc(t, int(debugValues["rt.size"]))
			m.putBytes(runtime, debugTable(c.names, c.version, debugValues))
			l, v, err := parseDebugOffsets(m.data[runtime-m.base:][:maxDebugOffsets])
			if err != nil {
				t.Fatal(err)
			}
			if v != c.version {
				t.Errorf("version %s, want %s", v, c.version)
			}
			interp := m.alloc(t, int(debugValues["is.size"]))
			m.put64(runtime+l.runtimeInterpHead, interp)
			ts := m.buildThreads(t, &l, interp, twoThreads)
			m.put64(interp+debugValues["is.gil_runtime_state"], 5000)
			m.put64(interp+debugValues["is.gil_runtime_state_holder"], ts[1])
			m.put32(interp+debugValues["is.gil_runtime_state_locked"], 1)

			// The version the caller guessed (from a file name) does not
			// matter: the table says which it is.
			st, err := Read(m, runtime, MakeVersion(3, 11, 0))
			if err != nil {
				t.Fatal(err)
			}
			if st.Version != c.version {
				t.Errorf("State.Version %s, want %s", st.Version, c.version)
			}
			checkTwoThreads(t, st, ts)
		})
	}
}

// TestDebugOffsetsMisread: a table whose order is not the one expected
// (a 3.14 table claiming to be 3.13) is refused, not read as garbage.
func TestDebugOffsetsRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		table []byte
		want  string
	}{
		{"3.14 order, 3.13 version", debugTable(debug314, MakeVersion(3, 13, 0), debugValues), "outside its structure"},
		{"3.12 version", debugTable(debug313, MakeVersion(3, 12, 0), debugValues), "not 3.13 or later"},
		{"free-threaded", func() []byte {
			v := map[string]uint64{"free_threaded": 1}
			for k, x := range debugValues {
				v[k] = x
			}
			return debugTable(debug314, MakeVersion(3, 14, 0), v)
		}(), "free-threaded"},
		{"no cookie", make([]byte, 64), "cookie"},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := append(c.table, make([]byte, maxDebugOffsets)...)
			_, _, err := parseDebugOffsets(raw)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestReadGarbage: cycles and absurd values end in errors, not hangs.
func TestReadGarbage(t *testing.T) {
	l := layout311
	m := newImage(1 << 16)
	runtime := m.alloc(t, 1024)
	interp := m.alloc(t, 512)
	m.put64(runtime+l.runtimeInterpHead, interp)
	ts := m.alloc(t, 512)
	m.put64(interp+l.interpThreadsHead, ts)
	m.put64(ts+l.tstateNext, ts) // a thread list that loops
	if _, err := Read(m, runtime, MakeVersion(3, 11, 2)); err == nil || !strings.Contains(err.Error(), "does not end") {
		t.Errorf("looping thread list: error %v", err)
	}
	m.put64(ts+l.tstateNext, 0)
	cf := m.alloc(t, 32)
	fr := m.alloc(t, 96)
	m.put64(ts+l.tstateCFrame, cf)
	m.put64(cf+l.cframeCurrentFrame, fr)
	m.put64(fr+l.framePrevious, fr) // a frame chain that loops
	code := m.code(t, &l, "a.py", "f", "f", 1, 1)
	m.put64(fr+l.frameCode, code)
	st, err := Read(m, runtime, MakeVersion(3, 11, 2))
	if err != nil {
		t.Fatal(err)
	}
	if th := st.Threads[0]; th.Err == nil || len(th.Frames) != 1 {
		t.Errorf("looping frame chain: %d frames, error %v", len(th.Frames), th.Err)
	}
	// A huge string length is refused.
	name := m.str(t, &l, "f")
	m.put64(code+l.codeQualname, name)
	m.put64(code+l.codeName, name)
	m.put64(name+l.unicodeLength, 1<<40)
	r, _ := NewReader(m, runtime, MakeVersion(3, 11, 2))
	st, _ = r.Read()
	if th := st.Threads[0]; th.Err == nil || !strings.Contains(th.Err.Error(), "out of bounds") {
		t.Errorf("huge string: error %v", th.Err)
	}
}

func TestVersion(t *testing.T) {
	if s := Version(0x030B02F0).String(); s != "3.11.2" {
		t.Errorf("0x030B02F0 = %s", s)
	}
	if s := Version(0x030E00B2).String(); s != "3.14.0b2" {
		t.Errorf("0x030E00B2 = %s", s)
	}
	for name, want := range map[string]string{"python3.11": "3.11.0", "libpython3.12.so.1.0": "3.12.0", "libpython3.13d.so": "3.13.0"} {
		v, ok := VersionFromName(name)
		if !ok || v.String() != want {
			t.Errorf("VersionFromName(%q) = %s %v, want %s", name, v, ok, want)
		}
	}
	if _, ok := VersionFromName("python3"); ok {
		t.Errorf("python3 has no minor version")
	}
	if _, err := NewReader(newImage(4096), 0x7f0000100100, MakeVersion(3, 10, 4)); err == nil {
		t.Errorf("3.10 accepted")
	}
}
