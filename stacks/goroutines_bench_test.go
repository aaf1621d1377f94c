package stacks

import (
	"bytes"
	"testing"
)

// BenchmarkParseBigGoroutines is the whole parse `hangdoc analyze` runs
// on the 100 MB goroutine dump of `make bench`: repair, splitter and the
// goroutine reader (BenchmarkParseGoroutines times the reader alone).
func BenchmarkParseBigGoroutines(b *testing.B) {
	in := syntheticGoDump(b, 100<<20)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, _, err := Parse(bytes.NewReader(in), ""); err != nil {
			b.Fatal(err)
		}
	}
}
