package report

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// Document is the hangdoc/v1 JSON object: the snapshot's fields and the
// diagnoses beside them.
type Document struct {
	*stacks.Snapshot
	Diagnoses []heuristics.Diagnosis `json:"diagnoses"`
}

// JSON writes the hangdoc/v1 document. Diagnoses is always a list, never
// null, so consumers can iterate without a check.
//
// The document is streamed a thread at a time: a dump of 100,000 threads
// is never held twice (encoded, then indented) in memory. The bytes are
// those json.Encoder with a two-space indent writes for Document (a test
// holds the two equal), except that C1 controls and bidirectional
// overrides are escaped too (escapeControls).
func JSON(w io.Writer, res *heuristics.Result) error {
	snap, diags := res.Snap, res.Diagnoses
	if diags == nil {
		diags = []heuristics.Diagnosis{}
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	j := &jsonStream{w: bw}
	j.document(snap, diags)
	if j.err != nil {
		return j.err
	}
	return bw.Flush()
}

// jsonStream writes indented JSON values one at a time.
type jsonStream struct {
	w       *bufio.Writer
	buf     bytes.Buffer
	scratch []byte // plainThread's
	err     error
}

// value writes v, marshalled and indented as if it stood depth levels
// deep in the document (its first line is not indented: the caller wrote
// the key or the indent before it).
func (j *jsonStream) value(v any, depth int) {
	if j.err != nil {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		j.err = err
		return
	}
	j.indented(raw, depth)
}

// indented writes raw, compact JSON, as value does.
func (j *jsonStream) indented(raw []byte, depth int) {
	j.buf.Reset()
	if err := json.Indent(&j.buf, raw, indentOf(depth), "  "); err != nil {
		j.err = err
		return
	}
	j.raw(escapeControls(j.buf.Bytes()))
}

func (j *jsonStream) raw(b []byte) {
	if j.err == nil {
		_, j.err = j.w.Write(b)
	}
}

func (j *jsonStream) str(s string) {
	if j.err == nil {
		_, j.err = j.w.WriteString(s)
	}
}

func indentOf(depth int) string {
	const spaces = "                                "
	return spaces[:min(len(spaces), 2*depth)]
}

// object writes the JSON object raw depth-1 levels deep, indented as a
// whole, except that the member key, which raw holds as an empty list
// (the struct was marshalled with that field emptied), is written by
// write. Its key is found by its text: a string holds no unescaped
// quote, so the first `"key": []` on a line of its own at the members'
// indent is the member. Indenting raw as one value, not member by
// member through a json.Decoder, saves 0.1 s of CPU on the diagnoses
// of a 100 MB gdb dump (a list of 100,000 tids).
func (j *jsonStream) object(raw []byte, depth int, key string, write func()) {
	if j.err != nil {
		return
	}
	var b bytes.Buffer // not j.buf, which write uses
	if err := json.Indent(&b, raw, indentOf(depth-1), "  "); err != nil {
		j.err = err
		return
	}
	out := escapeControls(b.Bytes())
	member := "\n" + indentOf(depth) + `"` + key + `": `
	i := bytes.Index(out, []byte(member+"[]"))
	if i < 0 {
		j.raw(out)
		return
	}
	at := i + len(member)
	j.raw(out[:at])
	write()
	j.raw(out[at+len("[]"):])
}

// list writes n elements depth levels deep, each by elem.
func (j *jsonStream) list(n, depth int, elem func(i int)) {
	if n == 0 {
		j.str("[]")
		return
	}
	j.str("[\n")
	for i := 0; i < n; i++ {
		if i > 0 {
			j.str(",\n")
		}
		j.str(indentOf(depth + 1))
		elem(i)
	}
	j.str("\n" + indentOf(depth) + "]")
}

func (j *jsonStream) document(snap *stacks.Snapshot, diags []heuristics.Diagnosis) {
	if snap == nil || snap.Processes == nil {
		j.value(Document{Snapshot: snap, Diagnoses: diags}, 0)
		j.str("\n")
		return
	}
	head := *snap
	head.Processes = []*stacks.Process{}
	raw, err := json.Marshal(Document{Snapshot: &head, Diagnoses: diags})
	if err != nil {
		j.err = err
		return
	}
	j.object(raw, 1, "processes", func() {
		j.list(len(snap.Processes), 1, func(i int) { j.process(snap.Processes[i], 2) })
	})
	j.str("\n")
}

// process writes p with its threads one at a time.
func (j *jsonStream) process(p *stacks.Process, depth int) {
	if p == nil || p.Threads == nil {
		j.value(p, depth)
		return
	}
	head := *p
	head.Threads = []*stacks.Thread{}
	raw, err := json.Marshal(head)
	if err != nil {
		j.err = err
		return
	}
	j.object(raw, depth+1, "threads", func() {
		stacks := map[stackID][]byte{}
		j.list(len(p.Threads), depth+1, func(i int) { j.thread(p.Threads[i], depth+2, stacks) })
	})
}

// stackID is a stack by its frames' memory: threads with equal stacks
// share one []Frame (stacks/share.go).
type stackID struct {
	first *stacks.Frame
	n     int
}

// stackKeyJSON is where a thread marshalled without its stack holds it,
// once indented.
var stackKeyJSON = []byte(`"stack": null`)

// thread writes t as value does, marshalling, indenting and escaping a
// stack that threads share once: the frames are most of a thread's
// JSON, and a dump of 34,000 threads has a few hundred distinct stacks.
// A value indented alone with its member's indent as prefix is the text
// json.Indent writes for it inside the object.
func (j *jsonStream) thread(t *stacks.Thread, depth int, cache map[stackID][]byte) {
	if j.err != nil {
		return
	}
	if len(t.Stack) == 0 || depth >= 15 {
		j.value(t, depth)
		return
	}
	id := stackID{&t.Stack[0], len(t.Stack)}
	st, ok := cache[id]
	if !ok {
		raw, err := json.Marshal(t.Stack)
		if err != nil {
			j.err = err
			return
		}
		var b bytes.Buffer
		if err := json.Indent(&b, raw, indentOf(depth+1), "  "); err != nil {
			j.err = err
			return
		}
		st = bytes.Clone(escapeControls(b.Bytes()))
		if len(cache) < 1<<16 {
			cache[id] = st
		}
	}
	if j.plainThread(t, depth, st) {
		return
	}
	head := *t
	head.Stack = nil
	raw, err := head.MarshalJSON() // as json.Marshal writes it, without compacting it again
	if err != nil {
		j.err = err
		return
	}
	j.buf.Reset()
	if err := json.Indent(&j.buf, raw, indentOf(depth), "  "); err != nil {
		j.err = err
		return
	}
	out := escapeControls(j.buf.Bytes())
	// the first "stack" key is the thread's: those of its samples come
	// after it, and no string holds an unescaped quote
	i := bytes.Index(out, stackKeyJSON)
	if i < 0 {
		j.value(t, depth)
		return
	}
	at := i + len(`"stack": `)
	j.raw(out[:at])
	j.raw(st)
	j.raw(out[at+len("null"):])
}

// plainThread writes t, whose stack st already holds, the way thread
// does, without reflection, indenting or escaping: a native thread whose
// fields are only its tid, name, state, CPU, notes and number, each text
// printable ASCII that needs no escape. It says false, having written
// nothing, for any other thread. Most of a 100 MB gdb dump's JSON is its
// threads: encoding/json, json.Indent and escapeControls on each took
// about 0.15 s of CPU per 100,000 threads.
func (j *jsonStream) plainThread(t *stacks.Thread, depth int, st []byte) bool {
	if t.Wait != nil || t.Runtime != nil || len(t.Samples()) > 0 || len(t.Returned()) > 0 || t.Handle() != 0 ||
		!plainJSON(t.Name) || !plainJSON(t.State) || !plainJSON(t.Number) ||
		(t.CPU != 0 && (math.IsNaN(t.CPU) || math.IsInf(t.CPU, 0))) {
		return false
	}
	for _, n := range t.Notes {
		if !plainJSON(n) {
			return false
		}
	}
	in, in2 := indentOf(depth+1), indentOf(depth+2)
	b := append(j.scratch[:0], "{\n"...)
	b = append(append(b, in...), `"tid": `...)
	b = strconv.AppendInt(b, int64(t.Tid), 10)
	b = append(append(append(append(b, ",\n"...), in...), `"name": "`...), t.Name...)
	b = append(b, '"')
	if t.State != "" {
		b = append(append(append(append(b, ",\n"...), in...), `"state": "`...), t.State...)
		b = append(b, '"')
	}
	if t.CPU != 0 {
		b = append(append(append(b, ",\n"...), in...), `"cpu": `...)
		b = appendJSONFloat(b, t.CPU)
	}
	b = append(append(append(b, ",\n"...), in...), `"stack": `...)
	b = append(b, st...)
	if len(t.Notes) > 0 {
		b = append(append(append(b, ",\n"...), in...), `"notes": [`...)
		for i, n := range t.Notes {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(append(append(append(b, '\n'), in2...), '"'), n...)
			b = append(b, '"')
		}
		b = append(append(append(b, '\n'), in...), ']')
	}
	if t.Number != "" {
		b = append(append(append(append(b, ",\n"...), in...), `"number": "`...), t.Number...)
		b = append(b, '"')
	}
	b = append(append(append(b, '\n'), indentOf(depth)...), '}')
	j.scratch = b
	j.raw(b)
	return true
}

// plainJSON says whether encoding/json writes s as it is between quotes:
// printable ASCII without a quote, a backslash or an HTML character
// (which it escapes as \u003c and the like).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// appendJSONFloat appends f as encoding/json writes a float64 (not NaN or
// infinite): the shortest decimal, in exponent form only below 1e-6 or
// from 1e21, with "e-07" cleaned to "e-7".
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// escapeControls writes the C1 controls and bidirectional overrides that
// encoding/json leaves raw as \u escapes: the same JSON value, but one
// that cannot drive a terminal when someone cats the file.
func escapeControls(b []byte) []byte {
	if ascii(b) || !bytes.ContainsFunc(b, isRawInJSON) {
		return b
	}
	var out bytes.Buffer
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if isRawInJSON(r) {
			fmt.Fprintf(&out, "\\u%04x", r)
		} else {
			out.Write(b[:n])
		}
		b = b[n:]
	}
	return out.Bytes()
}

// ascii says whether b holds no byte from 0x80, a word at a time: the
// rune-by-rune test took 0.09 s of CPU on a 100 MB gdb dump's document.
func ascii(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// isRawInJSON: what isControl flags beyond C0 and DEL, which
// encoding/json escapes itself (and whose newlines here are the indent).
func isRawInJSON(r rune) bool { return r >= 0x80 && isControl(r) }
