package stacks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// hangdoc's own JSON (`hangdoc attach --format json`, report.JSON):
//
//	{
//	  "schema": "hangdoc/v1",
//	  "source": "attach", "taken": "…", "samples": 3, "interval": "200ms",
//	  "evidence": {…},
//	  "processes": [ … ],
//	  "diagnoses": [ … ]
//	}
//
// The snapshot's fields are the document's top level; diagnoses sit beside
// them. Reading it back gives the snapshot as it was taken; the diagnoses
// are left out, since analyze computes them again (with the rules of the
// hangdoc that reads it).

func init() {
	registerFormat(&Format{Name: "hangdoc-json", Sniff: sniffHangdocJSON, Parse: ParseHangdocJSON})
}

var (
	hdSchemaRE = lazyre.New(`"(?i:schema)"\s*:\s*"(hangdoc/[^"]*)"`)
	hdObjectRE = lazyre.New(`(?m)^[ \t>]*\{\s*$|^\s*\{\s*"`)
)

func sniffHangdocJSON(head []byte) int {
	if !hdSchemaRE.Match(head) {
		return 0
	}
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(t) > 0 && t[0] == '{' {
		return 100
	}
	if hdObjectRE.Match(head) {
		return 50 // pasted: inside a fence, after some prose
	}
	return 0
}

// ParseHangdocJSON reads a hangdoc/v1 document back into its snapshot.
// A document of another schema is refused with an error that says which
// one it is. Pasted documents (in a Markdown fence, quoted with "> ",
// with prose around them) are read too; the prose is reported skipped.
func ParseHangdocJSON(r io.Reader) (*Snapshot, []Skipped, error) {
	br := bufioReader(r)
	head, _ := br.Peek(4 << 10)
	if t := bytes.TrimLeft(head, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		b, err := io.ReadAll(br)
		if err != nil && len(b) == 0 {
			return nil, nil, err
		}
		snap, perr := decodeHangdocJSON(bytes.TrimPrefix(b, []byte("\ufeff")), 0)
		if perr != nil {
			return nil, nil, perr
		}
		return snap, nil, err
	}
	// Pasted: find the object's lines, cleaned of quoting and colours.
	var buf bytes.Buffer
	var skipped skipList
	start, depth, done, first := 0, 0, false, 0
	readErr := scanTextLines(br, func(l textLine) {
		t := l.text
		if t == "" {
			return
		}
		if first == 0 {
			first = l.no
		}
		understood := true
		switch {
		case done:
			understood = isFence(t)
		case start == 0 && strings.HasPrefix(t, "{"):
			start = l.no
			fallthrough
		case start > 0:
			depth += jsonDepth(t)
			buf.WriteString(t)
			buf.WriteByte('\n')
			if depth <= 0 {
				done = true
			}
		case isFence(t):
		default:
			understood = false
		}
		if understood {
			skipped.close()
		} else {
			skipped.add(l.no, "not hangdoc JSON")
		}
	})
	if start == 0 {
		if readErr != nil {
			return nil, skipped.list, readErr
		}
		if first == 0 {
			return nil, nil, &LineError{Msg: "empty input: no hangdoc JSON"}
		}
		return nil, skipped.list, &LineError{Line: first, Msg: `not hangdoc JSON: no object ("{\"schema\": \"hangdoc/v1\", …}")`}
	}
	if !done {
		// the object never closed: a paste cut short (a schema of
		// another version still says so first)
		b := buf.Bytes()
		if m := hdSchemaRE.FindSubmatch(b); m != nil && string(m[1]) != Schema {
			return nil, skipped.list, schemaError(m, b, start-1)
		}
		return nil, skipped.list, &LineError{Line: start - 1 + bytes.Count(b, []byte("\n")), Msg: "hangdoc JSON: the document is cut short"}
	}
	snap, err := decodeHangdocJSON(buf.Bytes(), start-1)
	if err != nil {
		return nil, skipped.list, err
	}
	return snap, skipped.list, readErr
}

// jsonDepth is how many braces and brackets a line of JSON leaves open,
// strings skipped.
func jsonDepth(s string) int {
	d := 0
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case in:
		case c == '{' || c == '[':
			d++
		case c == '}' || c == ']':
			d--
		}
	}
	return d
}

// decodeHangdocJSON decodes one document; lineBase is added to the line
// numbers of errors (the document's first line in a pasted input).
func decodeHangdocJSON(b []byte, lineBase int) (*Snapshot, error) {
	var snap Snapshot
	dec := json.NewDecoder(bytes.NewReader(b))
	err := dec.Decode(&snap)
	if err != nil || snap.Schema != Schema {
		// Name the schema when there is one: a v2 document may not even
		// decode into a v1 snapshot.
		if m := hdSchemaRE.FindSubmatch(b); m != nil && string(m[1]) != Schema {
			return nil, schemaError(m, b, lineBase)
		}
	}
	if err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se) && se.Offset >= int64(len(bytes.TrimRight(b, " \t\r\n"))):
			return nil, &LineError{Line: lineBase + lineOf(b, se.Offset), Msg: "hangdoc JSON: the document is cut short"}
		case errors.As(err, &se):
			return nil, &LineError{Line: lineBase + lineOf(b, se.Offset), Msg: "hangdoc JSON: " + se.Error()}
		case errors.As(err, &te):
			return nil, &LineError{Line: lineBase + lineOf(b, te.Offset), Msg: fmt.Sprintf("hangdoc JSON: %s: %v", te.Field, te)}
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, &LineError{Line: lineBase + lineOf(b, int64(len(b))), Msg: "hangdoc JSON: the document is cut short"}
		}
		return nil, &LineError{Line: lineBase + lineOf(b, int64(len(b))), Msg: "hangdoc JSON: " + err.Error()}
	}
	switch {
	case snap.Schema == "":
		return nil, &LineError{Line: lineBase + 1, Msg: `not hangdoc JSON: no "schema" field`}
	case snap.Schema != Schema && strings.HasPrefix(snap.Schema, "hangdoc/"):
		return nil, &LineError{Line: lineBase + 1, Msg: fmt.Sprintf("schema %s: this hangdoc reads %s; upgrade hangdoc", capNote(snap.Schema), Schema)}
	case snap.Schema != Schema:
		return nil, &LineError{Line: lineBase + 1, Msg: fmt.Sprintf("not hangdoc JSON: schema %q", capNote(snap.Schema))}
	}
	threads := 0
	for _, p := range snap.Processes {
		if p == nil {
			return nil, &LineError{Line: lineBase + 1, Msg: "hangdoc JSON: a process is null"}
		}
		threads += len(p.Threads)
		for _, t := range p.Threads {
			if t == nil {
				return nil, &LineError{Line: lineBase + 1, Msg: fmt.Sprintf("hangdoc JSON: process %d: a thread is null", p.Pid)}
			}
			if t.Stack == nil {
				t.Stack = []Frame{}
			}
		}
		if p.Threads == nil {
			p.Threads = []*Thread{}
		}
	}
	if threads == 0 {
		// Nothing to diagnose: say so rather than report a clean bill.
		return nil, &LineError{Line: lineBase + 1, Msg: "hangdoc JSON: the snapshot has no thread"}
	}
	return &snap, nil
}

func schemaError(m [][]byte, b []byte, lineBase int) error {
	return &LineError{Line: lineBase + lineOf(b, int64(bytes.Index(b, m[0]))),
		Msg: fmt.Sprintf("schema %s: this hangdoc reads %s; upgrade hangdoc", m[1], Schema)}
}
