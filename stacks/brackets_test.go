package stacks

import "testing"

// Parentheses in strings and char literals of argument values are text;
// in a symbol's name every parenthesis counts.
func TestMatchParens(t *testing.T) {
	args := `f (c='(', s=")\"(", e='\'', x='\x01', n=(a)(b))`
	if got := closeParen(args, 2); got != len(args)-1 {
		t.Errorf("closeParen: %d, want %d", got, len(args)-1)
	}
	if got := matchOpenParen(args, true); got != 2 {
		t.Errorf("matchOpenParen quoted: %d, want 2", got)
	}
	if got := parenDepth(args[:len(args)-1]); got != 1 {
		t.Errorf("parenDepth of the list cut before its ')': %d, want 1", got)
	}
	sym := `ns::f(char const*)::'lambda'(int)`
	if got := matchOpenParen(sym, false); got != len(sym)-5 {
		t.Errorf("matchOpenParen unquoted: %d, want %d", got, len(sym)-5)
	}
	if got := closeParen("f (a=1", 2); got != -1 {
		t.Errorf("closeParen of a cut list: %d, want -1", got)
	}
}
