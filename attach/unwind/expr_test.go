package unwind

import (
	"strings"
	"testing"
)

// TestCheckExpr: the CFI expressions real tables carry pass; the ones
// that would make delve's evaluator allocate without bound or loop for
// ever (found by FuzzUnwind: a DW_OP_implicit_value of 186 TB ended the
// fuzzer with a fatal out of memory) are refused before it runs them.
func TestCheckExpr(t *testing.T) {
	for _, tc := range []struct {
		name string
		expr []byte
		bad  string // "" when the expression must pass
	}{
		// glibc's PLT CFA: breg7 8; breg16 0; lit15; and; lit11; ge; lit3; shl; plus
		{"plt", []byte{0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22}, ""},
		{"signal frame", []byte{0x77, 0xa0, 0x01, 0x06}, ""}, // breg7 160; deref
		{"forward branch", []byte{0x30, 0x28, 0x01, 0x00, 0x31, 0x30}, ""},
		{"const8", []byte{0x0e, 1, 2, 3, 4, 5, 6, 7, 8}, ""},
		{"implicit value of 186 TB", []byte{0x9e, 0xaa, 0xd2, 0xaa, 0xa5, 0xe5, 0xa5, 0x2a}, "not one CFI uses"},
		{"backward skip", []byte{0x30, 0x2f, 0xfd, 0xff}, "backward branch"},
		{"truncated const4", []byte{0x0c, 1, 2}, "truncated"},
		{"truncated skip", []byte{0x2f, 0x01}, "truncated"},
		{"piece", []byte{0x50, 0x93, 0x08}, "not one CFI uses"},
		{"cut LEB128", []byte{0x77, 0x80}, "truncated"},
	} {
		err := checkExpr(tc.expr)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.bad)
		}
	}
}
