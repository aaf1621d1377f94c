package attach_test

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/stacks"
)

// hostileBound is how long one attach to a hostile target may take
// before the test calls it a hang.
const hostileBound = 30 * time.Second

// attachBounded attaches to pid with opts and fails the test if the
// attach takes longer than hostileBound (the attach goroutine is left
// behind then: the test fails anyway, and the patient's cleanup kills
// the target).
func attachBounded(t *testing.T, pid int, opts attach.Options) (*stacks.Snapshot, time.Duration, error) {
	t.Helper()
	type result struct {
		snap *stacks.Snapshot
		err  error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		snap, err := attach.Attach(context.Background(), []int{pid}, opts)
		done <- result{snap, err}
	}()
	select {
	case r := <-done:
		return r.snap, time.Since(start), r.err
	case <-time.After(hostileBound):
		t.Fatalf("attach to pid %d still running after %v: it hangs", pid, hostileBound)
		return nil, 0, nil
	}
}

// renderAll renders snap as plain text, colored text and Markdown, and
// checks that none of them carries a raw escape (other than the colors
// hangdoc writes itself) or invalid UTF-8.
func renderAll(t *testing.T, snap *stacks.Snapshot) (plain string) {
	t.Helper()
	res := heuristics.Diagnose(snap, heuristics.Options{})
	var txt, col, md bytes.Buffer
	if err := report.Text(&txt, res, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := report.Text(&col, res, report.TextOptions{Color: true, Width: 100}); err != nil {
		t.Fatal(err)
	}
	if err := report.Markdown(&md, res, report.MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, out := range []struct {
		name string
		b    []byte
		// colors: SGR sequences (ESC [ … m) are hangdoc's own.
		colors bool
	}{{"text", txt.Bytes(), false}, {"colored text", col.Bytes(), true}, {"markdown", md.Bytes(), false}} {
		if !utf8.Valid(out.b) {
			t.Errorf("%s report is not valid UTF-8", out.name)
		}
		s := string(out.b)
		if out.colors {
			s = stripSGR(s)
		}
		if i := strings.IndexAny(s, "\x1b\a\u009b"); i >= 0 {
			t.Errorf("%s report carries a raw control character at byte %d: %q", out.name, i, s[max(0, i-40):min(len(s), i+40)])
		}
	}
	return txt.String()
}

// stripSGR removes the color sequences ESC [ digits/semicolons m.
func stripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';') {
				j++
			}
			if j < len(s) && s[j] == 'm' {
				i = j
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestHostileThreadNames attaches to threads named with terminal escapes
// and invalid UTF-8, run from a path that holds them too: the reports
// show them escaped, never raw.
func TestHostileThreadNames(t *testing.T) {
	patient.RequirePtrace(t)
	bin := patient.Build(t, "hostile_names.c", patient.O2g...)
	// The executable's path is hostile as well: module paths and exe.
	dir := filepath.Join(t.TempDir(), "bin\x1b[2J\xff")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(dir, "evil\x1b]52;c;eA==\a")
	copyExecutable(t, bin, evil, nil)
	p := patient.Start(t, evil)
	snap, took, err := attachBounded(t, p.Pid, attach.Options{Samples: 2, Interval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	checkReleased(t, p.Pid)
	var names []string
	for _, th := range snap.Processes[0].Threads {
		names = append(names, th.Name)
	}
	raw := strings.Join(names, "|")
	for _, want := range []string{"\x1b]52;c;x\a", "\x1b[2J", "\xff\xfe"} {
		if !strings.Contains(raw, want) {
			t.Errorf("no thread named %q in the snapshot (names %q): the test does not exercise it", want, names)
		}
	}
	out := renderAll(t, snap)
	for _, want := range []string{`\x1b]52;c;x\x07`, `\x1b[2J`} {
		if !strings.Contains(out, want) {
			t.Errorf("text report does not show the name %q escaped", want)
		}
	}
	t.Logf("attach took %v; thread names %q", took, names)
}

// ehFrame returns the file offset and size of path's .eh_frame.
func ehFrame(t *testing.T, path string) (off, size uint64, shdr int64) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, s := range f.Sections {
		if s.Name == ".eh_frame" {
			// The section header of index i: e_shoff + i*e_shentsize.
			var shoff uint64
			var b [8]byte
			fh, _ := os.Open(path)
			defer fh.Close()
			if _, err := fh.ReadAt(b[:], 0x28); err != nil { // e_shoff, ELF64
				t.Fatal(err)
			}
			shoff = binary.LittleEndian.Uint64(b[:])
			return s.Offset, s.Size, int64(shoff) + int64(i)*64
		}
	}
	t.Fatalf("%s: no .eh_frame", path)
	return 0, 0, 0
}

// copyExecutable copies src to dst, lets patch change the bytes, and
// makes dst executable.
func copyExecutable(t *testing.T, src, dst string, patch func([]byte)) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if patch != nil {
		patch(b)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// ehEntries returns the offsets (within the section) of the CIEs and
// FDEs of a well-formed .eh_frame with 32-bit lengths.
func ehEntries(sec []byte) (cies, fdes []int) {
	for off := 0; off+8 <= len(sec); {
		n := int(binary.LittleEndian.Uint32(sec[off:]))
		if n == 0 || n == 0xffffffff {
			break
		}
		if binary.LittleEndian.Uint32(sec[off+4:]) == 0 {
			cies = append(cies, off)
		} else {
			fdes = append(fdes, off)
		}
		off += 4 + n
	}
	return
}

// TestHostileEhFrame runs a patient whose executable has a corrupted
// .eh_frame (the program never reads it itself) and attaches: the attach
// must end in bounded time with a report and a note on the threads it
// could not unwind, never a panic or a hang.
func TestHostileEhFrame(t *testing.T) {
	patient.RequirePtrace(t)
	bin := patient.Build(t, "cfi_victim.c", patient.O2...)
	off, size, shdr := ehFrame(t, bin)
	le := binary.LittleEndian
	cases := []struct {
		name  string
		patch func(file, sec []byte)
	}{
		{"cie-length-past-section", func(_, sec []byte) {
			cies, _ := ehEntries(sec)
			for _, c := range cies {
				le.PutUint32(sec[c:], 0x7ffffff0)
			}
		}},
		{"fde-length-past-section", func(_, sec []byte) {
			_, fdes := ehEntries(sec)
			for _, f := range fdes {
				le.PutUint32(sec[f:], 0xfffffff0)
			}
		}},
		{"fde-cie-pointer-to-itself", func(_, sec []byte) {
			// The CIE pointer is the distance back from the field to
			// the CIE: 4 names the FDE's own length field.
			_, fdes := ehEntries(sec)
			for _, f := range fdes {
				le.PutUint32(sec[f+4:], 4)
			}
		}},
		{"fde-cie-pointer-to-next-fde", func(_, sec []byte) {
			// Each FDE names the FDE before it as its CIE: a chain of
			// "CIEs" that are FDEs.
			_, fdes := ehEntries(sec)
			for i := 1; i < len(fdes); i++ {
				le.PutUint32(sec[fdes[i]+4:], uint32(fdes[i]+4-fdes[i-1]))
			}
		}},
		{"64-bit-length-all-ones", func(_, sec []byte) {
			for i := range sec {
				sec[i] = 0xff
			}
		}},
		{"cfa-program-garbage", func(_, sec []byte) {
			// Keep lengths and pointers, fill every instruction byte
			// (after the FDE's pc range) with DW_CFA_remember_state
			// and advance_loc opcodes.
			_, fdes := ehEntries(sec)
			for _, f := range fdes {
				n := int(le.Uint32(sec[f:]))
				for i := f + 4 + 4 + 8 + 1; i < f+4+n; i++ {
					if i%2 == 0 {
						sec[i] = 0x0a // DW_CFA_remember_state
					} else {
						sec[i] = 0x41 // DW_CFA_advance_loc 1
					}
				}
			}
			// The tables now read a zero return address where they
			// promise a caller: the unwinder says the stack may be cut.
		}},
		{"truncated-mid-entry", func(file, sec []byte) {
			// The section header says the section ends half-way
			// through an entry.
			_, fdes := ehEntries(sec)
			cut := uint64(len(sec) / 2)
			if len(fdes) > 1 {
				cut = uint64(fdes[len(fdes)/2] + 6)
			}
			le.PutUint64(file[shdr+32:], cut) // sh_size of Elf64_Shdr
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "cfi_victim-"+c.name)
			copyExecutable(t, bin, dst, func(b []byte) { c.patch(b, b[off:off+size]) })
			p := patient.Start(t, dst)
			snap, took, err := attachBounded(t, p.Pid, attach.Options{Samples: 2, Interval: 5 * time.Millisecond})
			if err != nil {
				t.Fatalf("attach: %v", err)
			}
			checkReleased(t, p.Pid)
			proc := snap.Processes[0]
			if len(proc.Threads) != 3 {
				t.Errorf("%d threads, want 3", len(proc.Threads))
			}
			notes := append([]string(nil), proc.Notes...)
			for _, th := range proc.Threads {
				if len(th.Stack) > 512 {
					t.Errorf("thread %d: %d frames, past the default MaxDepth", th.Tid, len(th.Stack))
				}
				notes = append(notes, th.Notes...)
			}
			if len(notes) == 0 {
				t.Errorf("no note says the executable's unwind tables are broken")
			}
			out := renderAll(t, snap)
			t.Logf("attach took %v; notes: %q", took, notes)
			if os.Getenv("HANGDOC_DEBUG") != "" {
				t.Log(out)
			}
		})
	}
}

// TestHostileDeepStack attaches to a thread 100,000 frames deep: the
// attach returns in bounded time with at most MaxDepth frames and a
// depth-limit note.
func TestHostileDeepStack(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "deep_stack.c", patient.O2...))
	deep := p.Int(t, "deep")
	for _, maxDepth := range []int{0, 2000} {
		snap, took, err := attachBounded(t, p.Pid, attach.Options{Samples: 2, Interval: 5 * time.Millisecond, MaxDepth: maxDepth})
		if err != nil {
			t.Fatal(err)
		}
		checkReleased(t, p.Pid)
		limit := maxDepth
		if limit == 0 {
			limit = 512 // the default
		}
		var found bool
		for _, th := range snap.Processes[0].Threads {
			// MaxDepth bounds the frames unwound; inlined frames are
			// named at their PCs on top of that.
			if n := machineFrameCount(th.Stack); n > limit {
				t.Errorf("MaxDepth %d: thread %d has %d machine frames", maxDepth, th.Tid, n)
			}
			if th.Tid != deep {
				continue
			}
			found = true
			if len(th.Stack) < limit/2 {
				t.Errorf("MaxDepth %d: the deep thread has only %d frames", maxDepth, len(th.Stack))
			}
			if !strings.Contains(strings.Join(th.Notes, "; "), "depth limit") {
				t.Errorf("MaxDepth %d: the deep thread has no depth-limit note: %q", maxDepth, th.Notes)
			}
			t.Logf("MaxDepth %d: attach took %v, %d frames, notes %q", maxDepth, took, len(th.Stack), th.Notes)
		}
		if !found {
			t.Fatalf("no thread %d in the snapshot", deep)
		}
		renderAll(t, snap)
	}
}

// TestHostileThreadChurn attaches 20 times to a process whose threads
// come and go all the time: threads exit between the listing and the
// reading. No attach may fail or panic; a thread that vanished is a note.
func TestHostileThreadChurn(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "thread_churn.c", patient.O2g...))
	notes := map[string]int{}
	for i := 0; i < 20; i++ {
		snap, _, err := attachBounded(t, p.Pid, attach.Options{Samples: 3, Interval: time.Millisecond})
		if err != nil {
			// The process itself never exits: none of the documented
			// errors (gone, no process) applies either.
			if errors.Is(err, attach.ErrProcessGone) || errors.Is(err, attach.ErrNoProcess) {
				t.Fatalf("attach %d: the patient is alive, yet: %v", i, err)
			}
			t.Fatalf("attach %d: %v", i, err)
		}
		if len(snap.Processes) != 1 || len(snap.Processes[0].Threads) < 5 {
			t.Fatalf("attach %d: want the main and 4 churn threads, got %+v", i, snap.Processes)
		}
		for _, th := range snap.Processes[0].Threads {
			for _, n := range th.Notes {
				notes[n]++
			}
		}
		renderAll(t, snap)
	}
	checkReleased(t, p.Pid)
	t.Logf("notes over 20 attaches: %v", notes)
}
