package stacks

import (
	"bytes"
	"io"
	"testing"
)

// BenchmarkParseBigGDB is the whole parse `hangdoc analyze` runs on the
// 32 MB gdb dump of `make bench`: repair, splitter and the gdb reader
// (BenchmarkParseGDB100MB times the gdb reader alone).
func BenchmarkParseBigGDB(b *testing.B) {
	in := syntheticGDBDump(b, 32<<20)
	parseAll := func(r io.Reader) (*Snapshot, []Skipped, error) {
		snap, skipped, _, err := Parse(r, "")
		return snap, skipped, err
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := parseAll(bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
}
