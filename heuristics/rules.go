package heuristics

// Known upstream bugs as data. A Rule refines a base diagnosis (one of
// the catalogue's ids) when its conditions hold: function names in the
// waiting thread's stack or in any thread, mapped libraries, the command
// line, a fork. A refinement keeps the base id, adds a KnownIssue with
// links, and gives the concrete fix. The built-in rules are rules.json,
// embedded; `--rules FILE` adds a user's own in the same schema. This file
// is the format: the Rule type, loading and validating a rules file;
// rules_match.go is the engine that applies them.

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// Rule is a known-issue rule. Every condition given must hold; each
// list's regexps must all match (Go RE2 syntax, unanchored unless the
// regexp says ^ or $).
type Rule struct {
	ID string `json:"id"`
	// Base lists the catalogue ids the rule refines.
	Base []string `json:"base"`
	// Frames: function-name regexps that must all match frames of one
	// thread the diagnosis names (its Tids; all threads of its processes
	// when it names none in the snapshot), in any of its samples.
	Frames []string `json:"frames,omitempty"`
	// AnyFrames: function-name regexps that must each match a frame of
	// some thread of the diagnosis's processes.
	AnyFrames []string `json:"any_frames,omitempty"`
	// Modules: regexps that must each match the path of an object mapped
	// in one of the diagnosis's processes, or in a forked child's parent.
	Modules []string `json:"modules,omitempty"`
	// Cmdline: regexps that must each match the command line (arguments
	// joined by spaces) of one of the diagnosis's processes.
	Cmdline []string `json:"cmdline,omitempty"`
	// Locks: regexps that must each match the symbol of a mutex a thread
	// the diagnosis names waits on ("server_lock", "_dl_load_lock").
	Locks []string `json:"locks,omitempty"`
	// Forked: one of the diagnosis's processes is a child that fork()ed
	// without exec.
	Forked bool `json:"forked,omitempty"`

	Title   string `json:"title"`
	Explain string `json:"explain,omitempty"`
	// Fix is the concrete fix; it replaces the diagnosis's fix unless
	// KeepFix is set.
	Fix     string   `json:"fix"`
	KeepFix bool     `json:"keep_fix,omitempty"`
	Links   []string `json:"links,omitempty"`

	// Source is where the rule came from: "built-in" or a file name.
	Source string `json:"-"`

	re *ruleRegexps
}

type ruleRegexps struct {
	frames, anyFrames, modules, cmdline, locks []*regexp.Regexp
}

// RuleError says which rule of a rules file is wrong, and where:
// "rules.json: rule 3 (openblas-fork): frames[0]: bad regexp …". Rules
// count from 0, as the JSON list does.
type RuleError struct {
	File  string // "" when not known
	Index int    // -1 for the file as a whole
	ID    string
	Field string // "frames[0]", "base[1]", "title"; "" for the rule as a whole
	Err   error
}

func (e *RuleError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File + ": ")
	}
	if e.Index >= 0 {
		fmt.Fprintf(&b, "rule %d", e.Index)
		if e.ID != "" {
			fmt.Fprintf(&b, " (%s)", e.ID)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *RuleError) Unwrap() error { return e.Err }

//go:embed rules.json
var builtinRulesJSON []byte

var builtin struct {
	once  sync.Once
	rules []Rule
}

// builtinRules returns the embedded rules, parsed once.
func builtinRules() []Rule {
	builtin.once.Do(func() {
		rs, err := loadRules(bytes.NewReader(builtinRulesJSON), "rules.json")
		if err != nil {
			panic("heuristics: built-in " + err.Error())
		}
		for i := range rs {
			rs[i].Source = "built-in"
		}
		builtin.rules = rs
	})
	return append([]Rule(nil), builtin.rules...)
}

// BuiltinRules returns the known-issue rules hangdoc ships with, in the
// order they are tried.
func BuiltinRules() []Rule { return builtinRules() }

// LoadRules reads a rules file: {"rules": [ {rule}, … ]}. It fails on
// the first rule that is wrong, naming its index, id and field: unknown
// fields, bad regexps, unknown base ids, missing title or fix, a rule
// with no condition, links that are not http(s) URLs, duplicate ids.
func LoadRules(r io.Reader) ([]Rule, error) { return loadRules(r, "") }

// LoadRulesFile reads a rules file from a path; errors start with it.
func LoadRulesFile(path string) ([]Rule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rs, err := loadRules(f, path)
	for i := range rs {
		rs[i].Source = path
	}
	return rs, err
}

func loadRules(r io.Reader, file string) ([]Rule, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, &RuleError{File: file, Index: -1, Err: err}
	}
	var doc struct {
		Rules *[]json.RawMessage `json:"rules"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, &RuleError{File: file, Index: -1, Err: jsonError(data, 0, err)}
	}
	if doc.Rules == nil {
		return nil, &RuleError{File: file, Index: -1, Err: errors.New(`no "rules" list: want {"rules": [...]}`)}
	}
	var out []Rule
	seen := map[string]int{}
	for i, raw := range *doc.Rules {
		var peek struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(raw, &peek)
		fail := func(field string, err error) error {
			return &RuleError{File: file, Index: i, ID: peek.ID, Field: field, Err: err}
		}
		var rule Rule
		d := json.NewDecoder(bytes.NewReader(raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&rule); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, fail(te.Field, fmt.Errorf("want %s, got a JSON %s", te.Type, te.Value))
			}
			return nil, fail("", jsonError(data, offsetOf(data, raw), err))
		}
		if field, err := rule.validate(); err != nil {
			return nil, fail(field, err)
		}
		if j, dup := seen[rule.ID]; dup {
			return nil, fail("id", fmt.Errorf("duplicate of rule %d", j))
		}
		seen[rule.ID] = i
		out = append(out, rule)
	}
	return out, nil
}

// jsonError turns a decoding error into one that says where: "line 4,
// column 12: invalid character …".
func jsonError(data []byte, base int64, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bad byte too.
		off := base + se.Offset - 1
		if off < 0 {
			off = 0
		}
		line, col := lineCol(data, off)
		return fmt.Errorf("line %d, column %d: %v", line, col, se)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("empty or truncated JSON")
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := "the file"
		if te.Field != "" {
			where = fmt.Sprintf("%q", te.Field)
		}
		line, col := lineCol(data, base+te.Offset)
		return fmt.Errorf("line %d, column %d: %s is a JSON %s, want %s (docs/rules.md has the schema and an example)",
			line, col, where, te.Value, jsonWant(te))
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return errors.New(msg)
}

// jsonWant says what JSON value a Go type takes, for a type error.
func jsonWant(te *json.UnmarshalTypeError) string {
	if te.Field == "" {
		return `an object: {"rules": [...]}`
	}
	switch te.Type.Kind() {
	case reflect.Slice:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return te.Type.String()
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// offsetOf finds where a raw rule sits in the file, for line numbers.
func offsetOf(data, raw []byte) int64 {
	if i := bytes.Index(data, raw); i >= 0 {
		return int64(i)
	}
	return 0
}

var ruleIDPattern = lazyre.New(`^[a-z0-9][a-z0-9._-]*$`)

// documentedIDs are the catalogue's stable ids (DESIGN.md); a rule may
// name one before its signature is built.
var documentedIDs = []string{
	"lock-order-cycle", "self-deadlock", "fork-inherited-lock", "orphaned-lock",
	"spin-wait-starved", "fork-after-accelerator-init", "collective-straggler",
	"waiting-on-process", "signal-handler-reentry", "loader-lock", "gil-deadlock",
	"lost-wakeup", "progressing", "io-wait", "sleeping",
}

func knownBaseID(id string) bool {
	if Lookup(id) != nil {
		return true
	}
	for _, d := range documentedIDs {
		if d == id {
			return true
		}
	}
	return false
}

// validate checks a rule and compiles its regexps; it returns the field
// that is wrong.
func (r *Rule) validate() (string, error) {
	switch {
	case r.ID == "":
		return "id", errors.New("missing")
	case !ruleIDPattern.MatchString(r.ID):
		return "id", fmt.Errorf("%q: want lower-case letters, digits, '.', '_' and '-'", r.ID)
	case len(r.Base) == 0:
		return "base", errors.New("missing: name the catalogue ids the rule refines")
	}
	for i, b := range r.Base {
		if !knownBaseID(b) {
			return fmt.Sprintf("base[%d]", i), fmt.Errorf("unknown signature id %q (hangdoc signatures lists them)", b)
		}
	}
	if strings.TrimSpace(r.Title) == "" {
		return "title", errors.New("missing")
	}
	if strings.TrimSpace(r.Fix) == "" {
		return "fix", errors.New("missing")
	}
	if len(r.Frames)+len(r.AnyFrames)+len(r.Modules)+len(r.Cmdline)+len(r.Locks) == 0 {
		return "", errors.New("no condition: give frames, any_frames, modules, cmdline or locks")
	}
	for i, l := range r.Links {
		u, err := url.Parse(l)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Sprintf("links[%d]", i), fmt.Errorf("%q is not an http(s) URL", l)
		}
	}
	_, field, err := r.compile()
	return field, err
}

// compile compiles the rule's regexps once.
func (r *Rule) compile() (*ruleRegexps, string, error) {
	if r.re != nil {
		return r.re, "", nil
	}
	re := &ruleRegexps{}
	for _, l := range []struct {
		name string
		src  []string
		dst  *[]*regexp.Regexp
	}{
		{"frames", r.Frames, &re.frames},
		{"any_frames", r.AnyFrames, &re.anyFrames},
		{"modules", r.Modules, &re.modules},
		{"cmdline", r.Cmdline, &re.cmdline},
		{"locks", r.Locks, &re.locks},
	} {
		for i, s := range l.src {
			x, err := regexp.Compile(s)
			if err != nil {
				msg := err.Error()
				var se *syntax.Error
				if errors.As(err, &se) {
					msg = se.Code.String()
					if se.Expr != s {
						msg += " at `" + se.Expr + "`"
					}
				}
				return nil, fmt.Sprintf("%s[%d]", l.name, i), fmt.Errorf("bad regexp `%s`: %s", s, msg)
			}
			*l.dst = append(*l.dst, x)
		}
	}
	r.re = re
	return re, "", nil
}
