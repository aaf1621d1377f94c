package stacks

import (
	"encoding/json"
	"strconv"
	"strings"
)

// NewArg is the one way an argument enters the model: every parser that
// reads arguments, and every live reader that produces them, gives the
// value as the tool or runtime prints it, and NewArg reads what the text
// names, once, so that no consumer parses it again:
//
//	"0x5555555580a0 <server_lock>"  Addr 0x5555555580a0, Symbol "server_lock", Exact
//	"futex@entry=0x7f…"             Addr 0x7f… (gdb's value on entry, the same as now), Exact
//	"0xc000012345?"                 Addr 0xc000012345, not Exact (Go: a register argument the runtime did not spill)
//	"10221"                         a.Int() 10221 (read when asked: an Arg stays 64 bytes)
//	"atfork_run_child"              Symbol "atfork_run_child" (an enumerator)
//
// Values that are neither (strings, structures, "<optimized out>",
// Python reprs) keep only their text.
func NewArg(name, value string) Arg {
	a := Arg{Name: name, Value: value}
	v := value
	if i := strings.LastIndex(v, "@entry="); i >= 0 {
		v = v[i+len("@entry="):]
	}
	switch {
	case strings.HasPrefix(v, "0x"):
		end := 2
		for end < len(v) && isHex(v[end]) {
			end++
		}
		addr, err := strconv.ParseUint(v[2:end], 16, 64)
		if err != nil {
			return a
		}
		a.Addr = addr
		rest := strings.TrimSpace(v[end:])
		a.Exact = rest != "?"
		if strings.HasPrefix(rest, "<") && strings.HasSuffix(rest, ">") {
			a.Symbol = rest[1 : len(rest)-1]
		}
	case isEnumerator(v):
		a.Symbol = v
	}
	return a
}

// Int is the value of an argument printed as a decimal integer
// ("expected=10221", "futex@entry=…" aside); ok is false for any other
// value. It is read when asked, not kept: few arguments are asked.
func (a Arg) Int() (n int64, ok bool) {
	v := a.Value
	if i := strings.LastIndex(v, "@entry="); i >= 0 {
		v = v[i+len("@entry="):]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// isEnumerator says whether v is a bare C identifier with a letter in it
// (gdb prints an enum's value by its name; Go's "_" is no name).
func isEnumerator(v string) bool {
	letter := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letter = true
		case c == '_' || i > 0 && c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return letter
}

// UnmarshalJSON reads an argument of a hangdoc/v1 document through
// NewArg: the JSON keeps the value as printed, and what it names is read
// from it as from a dump.
func (a *Arg) UnmarshalJSON(b []byte) error {
	var j struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*a = NewArg(j.Name, j.Value)
	return nil
}
