package stacks

import (
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// Demangle turns a C++ (_Z…) or Rust (_R…, and legacy _ZN…17h<hash>E)
// symbol into the name a person reads, with parameter types, as c++filt
// and rustfilt print it ("std::mutex::lock()", "worker(int)"); the hash of
// a legacy Rust name is dropped. A suffix after '@' ("@plt", a symbol
// version) is kept. Anything else, or a name the demangler rejects, is
// returned unchanged: names from pasted dumps are mostly demangled already.
func Demangle(name string) string {
	if !strings.HasPrefix(name, "_Z") && !strings.HasPrefix(name, "_R") {
		return name
	}
	base, suffix := name, ""
	if i := strings.IndexByte(name, '@'); i > 0 {
		base, suffix = name[:i], name[i:]
	}
	s, err := demangle.ToString(base)
	if err != nil || s == "" {
		return name
	}
	return s + suffix
}

// FuncBase reduces a demangled function name to its qualified name, for
// comparing names that come from different sources (symbols, gdb, pasted
// dumps): it drops the parameter list, cv- and ref-qualifiers, clone
// suffixes and the return type of a template function.
//
//	ns::Foo<int>::bar(int) const              → ns::Foo<int>::bar
//	main::{lambda()#1}::operator()() const    → main::{lambda()#1}::operator()
//	void foo<int>(int)                        → foo<int>
func FuncBase(name string) string {
	s := strings.TrimSpace(name)
	for {
		before := s
		if strings.HasSuffix(s, "]") {
			if i := strings.LastIndex(s, " [clone "); i > 0 {
				s = s[:i]
			}
		}
		for _, q := range []string{" const", " volatile", " restrict", " noexcept", " &&", " &"} {
			s = strings.TrimSuffix(s, q)
		}
		if s == before {
			break
		}
	}
	// "Foo::operator()" without parameters keeps its parentheses.
	if strings.HasSuffix(s, ")") && !strings.HasSuffix(s, "operator()") {
		if i := matchOpenParen(s, false); i > 0 {
			s = strings.TrimRight(s[:i], " ")
		}
	}
	return strings.TrimSpace(s[nameStart(s):])
}

// operatorTokens are the symbolic C++ operator names, longest first, so
// that "operator<" is not read as the start of a template argument list.
var operatorTokens = []string{
	"->*", "<<=", ">>=", "<=>",
	"()", "[]", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "->",
	"+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=", "<", ">", ",",
}

// nameStart returns where the qualified name begins in s, that is after a
// return type ("void foo<int>" → 5): just after the last space that is
// outside any brackets and not part of an operator name.
func nameStart(s string) int {
	start, depth := 0, 0
	for i := 0; i < len(s); i++ {
		if strings.HasPrefix(s[i:], "operator") && (i == 0 || !isIdent(s[i-1])) {
			j := i + len("operator")
			if j < len(s) && s[j] == ' ' {
				// operator new, operator delete[], operator bool: the
				// rest is all name.
				return start
			}
			for _, tok := range operatorTokens {
				if strings.HasPrefix(s[j:], tok) {
					j += len(tok)
					break
				}
			}
			i = j - 1
			// "operator< <A>": that space belongs to the name.
			if j < len(s) && s[j] == ' ' {
				i = j
			}
			continue
		}
		switch c := s[i]; c {
		case '<', '(', '[', '{':
			depth++
		case '>', ')', ']', '}':
			if depth > 0 {
				depth--
			}
		case ' ':
			if depth == 0 {
				start = i + 1
			}
		}
	}
	return start
}

func isIdent(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
