package attach_test

import (
	"testing"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// The expressions of attach and of the packages it links (goproc,
// python) compile on first use (lazyre): a bad one fails here.
func TestRegexpsCompile(t *testing.T) {
	if err := lazyre.CompileAll(); err != nil {
		t.Fatal(err)
	}
}
