package stacks

// Brackets and quotes in the text of a frame: the one place that matches
// parentheses (gdb's and lldb's argument lists, a symbol's parameter
// list) and steps over the strings and char literals of argument values.

// parenDepth counts parentheses left open in s, outside quotes.
func parenDepth(s string) int { return parens(s, 0, false) }

// quoteState follows the strings and char literals of gdb's text, read
// left to right.
type quoteState struct{ quote byte }

// skip says whether s[*i] is quoted text, or a quote opening or closing
// it, moving *i past an escaped character.
func (q *quoteState) skip(s string, i *int) bool {
	c := s[*i]
	switch {
	case q.quote != 0:
		if c == '\\' {
			*i++
		} else if c == q.quote {
			q.quote = 0
		}
	case c == '"':
		q.quote = c
	case c == '\'' && *i+2 < len(s) && (s[*i+2] == '\'' || s[*i+1] == '\\'):
		q.quote = c // a char literal: '(' or '\''
	default:
		return false
	}
	return true
}

// matchOpenParen returns the index of the '(' that matches the ')' ending
// s; -1 when there is none. With quoted, it skips quoted strings and char
// literals (gdb's argument values); symbol names have none.
func matchOpenParen(s string, quoted bool) int {
	depth := 0
	var quote byte
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if quoted && quote != 0 {
			if c == quote && !escaped(s, i) {
				quote = 0
			}
			continue
		}
		switch {
		case quoted && c == '"':
			if !escaped(s, i) {
				quote = c
			}
		case quoted && c == '\'':
			// only a char literal: 'x' or '\n'-like, seen from its end
			if i >= 2 && (s[i-2] == '\'' || i >= 3 && s[i-3] == '\'' && s[i-2] == '\\') && !escaped(s, i) {
				if s[i-2] == '\'' {
					i -= 2
				} else {
					i -= 3
				}
			}
		case c == ')':
			depth++
		case c == '(':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// escaped says whether s[i] is preceded by an odd number of backslashes.
func escaped(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// closeParen returns the index of the ')' that closes the '(' at s[open],
// skipping quoted strings and char literals; -1 when it does not close.
func closeParen(s string, open int) int { return parens(s, open, true) }

// parens reads s from from, left to right, outside quotes: the depth of
// the parentheses left open at its end, or, with stop, the index of the
// ')' that brings the depth back to 0 (-1 when none does).
func parens(s string, from int, stop bool) int {
	depth := 0
	var q quoteState
	for i := from; i < len(s); i++ {
		if q.skip(s, &i) {
			continue
		}
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if stop && depth == 0 {
				return i
			}
		}
	}
	if stop {
		return -1
	}
	return depth
}
