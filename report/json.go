package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
	w   *bufio.Writer
	buf bytes.Buffer
	err error
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

// object writes the JSON object raw depth-1 levels deep, its members
// in raw's order, each on its own line; a member whose key has a writer
// in streamed is written by it instead (raw holds null there: the
// struct was marshalled with that field emptied).
func (j *jsonStream) object(raw []byte, depth int, streamed map[string]func()) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		j.err = err
		return
	}
	j.str("{")
	for n := 0; dec.More(); n++ {
		tok, err := dec.Token()
		if err != nil {
			j.err = err
			return
		}
		var member json.RawMessage
		if err := dec.Decode(&member); err != nil {
			j.err = err
			return
		}
		if n > 0 {
			j.str(",")
		}
		key, _ := json.Marshal(tok.(string))
		j.str("\n" + indentOf(depth))
		j.raw(key)
		j.str(": ")
		if write := streamed[tok.(string)]; write != nil && string(member) == "[]" {
			write()
		} else {
			j.value(member, depth)
		}
	}
	j.str("\n" + indentOf(depth-1) + "}")
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
	j.object(raw, 1, map[string]func(){
		"processes": func() {
			j.list(len(snap.Processes), 1, func(i int) { j.process(snap.Processes[i], 2) })
		},
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
	j.object(raw, depth+1, map[string]func(){
		"threads": func() {
			stacks := map[stackID][]byte{}
			j.list(len(p.Threads), depth+1, func(i int) { j.thread(p.Threads[i], depth+2, stacks) })
		},
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

// escapeControls writes the C1 controls and bidirectional overrides that
// encoding/json leaves raw as \u escapes: the same JSON value, but one
// that cannot drive a terminal when someone cats the file.
func escapeControls(b []byte) []byte {
	if !bytes.ContainsFunc(b, isRawInJSON) {
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

// isRawInJSON: what isControl flags beyond C0 and DEL, which
// encoding/json escapes itself (and whose newlines here are the indent).
func isRawInJSON(r rune) bool { return r >= 0x80 && isControl(r) }
