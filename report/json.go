package report

import (
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
func JSON(w io.Writer, snap *stacks.Snapshot, diags []heuristics.Diagnosis) error {
	if diags == nil {
		diags = []heuristics.Diagnosis{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Document{Snapshot: snap, Diagnoses: diags}); err != nil {
		return err
	}
	_, err := w.Write(escapeControls(buf.Bytes()))
	return err
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
