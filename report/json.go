package report

import (
	"encoding/json"
	"io"

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
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Document{Snapshot: snap, Diagnoses: diags})
}
