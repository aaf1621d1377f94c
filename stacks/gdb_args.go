package stacks

import "strings"

// The lexer of a gdb frame's argument list, `f (a=0x… <sym>, s="…",
// v=...)`: C++ operator names matched, arguments split and named
// (ParseGDB's frames). Brackets and quotes are brackets.go's.

// splitGDBArgs splits "name (args)" into name and the text of the
// argument list; complete is false when the argument list does not close
// (a line cut mid-way), and the arguments are then left out: the last one
// may be cut inside its value.
func splitGDBArgs(body string) (name, args string, complete bool) {
	if strings.HasSuffix(body, ")") {
		if i := matchOpenParen(body, true); i > 0 && body[i-1] == ' ' {
			return strings.TrimSpace(body[:i]), body[i+1 : len(body)-1], true
		}
	}
	// No closing argument list: the name ends at the first " (" outside
	// template brackets, or runs to the end of what is left.
	depth := 0
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case 'o':
			// operator<, operator<<=, operator->…: not template brackets
			i = skipOperator(body, i)
		case '<':
			depth++
		case '>':
			if depth > 0 {
				depth--
			}
		case '(':
			if depth == 0 && i > 0 && body[i-1] == ' ' {
				return strings.TrimSpace(body[:i]), "", false
			}
		}
	}
	return strings.TrimSpace(body), "", false
}

// parseGDBArgList reads gdb's argument list, the text between a frame's
// parentheses: "mutex=0x5555… <server_lock>, private=0". Arguments are
// split at the commas outside quotes, parentheses, braces, brackets and
// angle brackets; gdb's "futex=futex@entry=0x…" (the value on entry, the
// same as now) keeps the value alone. Pieces that are not "name=value"
// (gdb's "..." with `set print frame-arguments none`) are left out.
func parseGDBArgList(s string) []Arg {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	pieces, ok := splitArgPieces(s, true)
	if !ok {
		// unbalanced angle brackets ("0x401136 <operator<<…>" cut, a
		// value with a bare '<'): split on the other brackets only
		pieces, _ = splitArgPieces(s, false)
	}
	var args []Arg
	for _, piece := range pieces {
		if len(args) == maxArgs {
			break
		}
		piece = strings.TrimSpace(piece)
		eq := strings.IndexByte(piece, '=')
		if eq <= 0 || !isArgName(piece[:eq]) {
			continue
		}
		if len(piece) > eq+1+maxArgValue {
			piece = piece[:eq+1+maxArgValue] + "…"
		} else {
			// a copy: the line the frame came from may be long
			piece = strings.Clone(piece)
		}
		name, value := piece[:eq], strings.TrimSpace(piece[eq+1:])
		if strings.HasPrefix(value, name) && strings.HasPrefix(value[len(name):], "@entry=") {
			value = value[len(name)+len("@entry="):]
		}
		if args == nil {
			args = make([]Arg, 0, min(len(pieces), maxArgs))
		}
		args = append(args, NewArg(name, value))
	}
	return args
}

// splitArgPieces splits an argument list at its top-level commas. ok is
// false when angle brackets did not balance (only with angles set).
func splitArgPieces(s string, angles bool) (pieces []string, ok bool) {
	pieces = make([]string, 0, 8)
	depth, angle := 0, 0
	var q quoteState
	start := 0
	for i := 0; i < len(s); i++ {
		if q.skip(s, &i) {
			continue
		}
		switch c := s[i]; {
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == ')' || c == '}' || c == ']':
			if depth > 0 {
				depth--
			}
		case angles && c == 'o':
			i = skipOperator(s, i)
		case angles && c == '<':
			angle++
		case angles && c == '>':
			if angle > 0 {
				angle--
			}
		case c == ',' && depth == 0 && angle == 0:
			pieces = append(pieces, s[start:i])
			start = i + 1
		}
	}
	pieces = append(pieces, s[start:])
	return pieces, angle == 0
}

// isArgName: an identifier as gdb prints parameter names (C, C++, Go's
// "~r0" results, Rust's "self").
func isArgName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isIdentByte(c) && c != '$' && c != '~' && c != '.' {
			return false
		}
	}
	return true
}

// skipOperator returns, when the word "operator" starts at s[i], the
// index of the last of the symbol characters after it (operator<,
// operator<<=, operator->: not template brackets); else i.
func skipOperator(s string, i int) int {
	if !strings.HasPrefix(s[i:], "operator") || i > 0 && isIdentByte(s[i-1]) {
		return i
	}
	j := i + len("operator")
	for j < len(s) && strings.IndexByte("<>=-!+*/%^&|~", s[j]) >= 0 {
		j++
	}
	return j - 1
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
