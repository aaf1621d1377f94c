package heuristics

import (
	"testing"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// The package's expressions compile on first use (lazyre): a bad one
// fails here, not in a user's run on the one dump that reaches it.
func TestRegexpsCompile(t *testing.T) {
	if err := lazyre.CompileAll(); err != nil {
		t.Fatal(err)
	}
}
