package heuristics

// Known upstream bugs as data. A Rule refines a base diagnosis (one of
// the catalogue's ids) when its conditions hold: function names in the
// waiting thread's stack or in any thread, mapped libraries, the command
// line, a fork. A refinement keeps the base id, adds a KnownIssue with
// links, and gives the concrete fix. The built-in rules are rules.json,
// embedded; `--rules FILE` adds a user's own in the same schema.

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

	"github.com/hangdoc/hangdoc/stacks"
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

var ruleIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

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

// RulesInForce are the built-in rules with the user's added, a user rule
// with a built-in's id replacing it in place: the rules Diagnose applies.
func RulesInForce(user []Rule) []Rule { return mergeRules(append(builtinRules(), user...)) }

// mergeRules lets a later rule replace an earlier one with the same id
// (a user's --rules file overrides a built-in), in the earlier's place.
func mergeRules(rules []Rule) []Rule {
	at := map[string]int{}
	var out []Rule
	for _, r := range rules {
		if i, ok := at[r.ID]; ok {
			out[i] = r
			continue
		}
		at[r.ID] = len(out)
		out = append(out, r)
	}
	return out
}

// refine adds known issues to the diagnoses the rules match. The first
// matching rule wins; a diagnosis a matcher already refined is left as
// it is.
func refine(a *Analysis, ds []Diagnosis, rules []Rule) []Diagnosis {
	rules = mergeRules(rules)
	for i := range ds {
		d := &ds[i]
		if d.KnownIssue != nil {
			continue
		}
		for j := range rules {
			r := &rules[j]
			why, ok := r.match(a, d)
			if !ok {
				continue
			}
			d.KnownIssue = &KnownIssue{ID: r.ID, Title: r.Title, Fix: r.Fix, Links: append([]string(nil), r.Links...), Explain: r.Explain}
			if !r.KeepFix {
				d.Fix = r.Fix
			}
			for _, l := range r.Links {
				if !containsString(d.Refs, l) {
					d.Refs = append(d.Refs, l)
				}
			}
			d.Evidence = append(d.Evidence, fmt.Sprintf("known issue `%s` matched: %s", r.ID, why))
			d.Summary += fmt.Sprintf(" (known issue `%s`)", r.ID)
			break
		}
	}
	return ds
}

func containsString(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// match says whether the rule applies to a diagnosis, and why.
func (r *Rule) match(a *Analysis, d *Diagnosis) (string, bool) {
	if !containsString(r.Base, d.ID) {
		return "", false
	}
	re, _, err := r.compile()
	if err != nil {
		return "", false
	}
	var procs []*stacks.Process
	for _, pid := range d.Pids {
		if p := a.Process(pid); p != nil {
			procs = append(procs, p)
		}
	}
	var named []ThreadRef
	for _, tid := range d.Tids {
		if ref, ok := a.DiagThread(d, tid); ok {
			named = append(named, ref)
		}
	}
	if len(named) == 0 {
		for _, p := range procs {
			for _, t := range p.Threads {
				named = append(named, ThreadRef{Proc: p, Thread: t})
			}
		}
	}
	var why []string
	if r.Forked {
		ok := false
		for _, p := range procs {
			if p.Fork != nil {
				ok = true
				why = append(why, fmt.Sprintf("pid %d is a forked child of %d", p.Pid, p.Fork.ParentPid))
				break
			}
			// No lineage read (a dump): the frames may show the child's
			// side of fork().
			if ev := forkChildSide(p); ev.ok && !a.Snap.Evidence.Lineage {
				ok = true
				why = append(why, fmt.Sprintf("pid %d is a forked child by its frames (`%s`)", p.Pid, ev.frame))
				break
			}
		}
		if !ok {
			return "", false
		}
	}
	if len(re.frames) > 0 {
		ok := false
		for _, ref := range named {
			if allMatchFrames(re.frames, ref.Thread) {
				ok = true
				why = append(why, fmt.Sprintf("frames %s in %s", quoteAll(r.Frames), whoThread(ref.Thread)))
				break
			}
		}
		if !ok {
			return "", false
		}
	}
	for i, x := range re.anyFrames {
		ref, ok := anyThreadFrame(x, procs)
		if !ok {
			return "", false
		}
		why = append(why, fmt.Sprintf("frame `%s` in %s", r.AnyFrames[i], whoThread(ref)))
	}
	for i, x := range re.modules {
		m, ok := anyModule(x, procs)
		if !ok {
			return "", false
		}
		why = append(why, fmt.Sprintf("module `%s` (%s)", m, r.Modules[i]))
	}
	for i, x := range re.cmdline {
		ok := false
		for _, p := range procs {
			cmd := strings.Join(p.Cmdline, " ")
			if cmd == "" {
				cmd = p.Exe
			}
			if x.MatchString(cmd) {
				ok = true
				why = append(why, fmt.Sprintf("command line of pid %d (%s)", p.Pid, r.Cmdline[i]))
				break
			}
		}
		if !ok {
			return "", false
		}
	}
	for i, x := range re.locks {
		ok := false
		for _, ref := range named {
			for _, w := range threadWaits(ref.Thread) {
				if w.Mutex != nil && w.Mutex.Symbol != "" && x.MatchString(w.Mutex.Symbol) {
					ok = true
					why = append(why, fmt.Sprintf("lock `%s` (%s)", w.Mutex.Symbol, r.Locks[i]))
					break
				}
			}
			if ok {
				break
			}
		}
		if !ok {
			return "", false
		}
	}
	return strings.Join(why, "; "), true
}

// threadFrames lists every frame of a thread across its samples.
func threadFrames(t *stacks.Thread) [][]stacks.Frame {
	out := [][]stacks.Frame{t.Stack}
	for _, s := range t.Samples {
		out = append(out, s.Stack)
	}
	return out
}

func threadWaits(t *stacks.Thread) []*stacks.Wait {
	var out []*stacks.Wait
	if t.Wait != nil {
		out = append(out, t.Wait)
	}
	for _, s := range t.Samples {
		if s.Wait != nil {
			out = append(out, s.Wait)
		}
	}
	return out
}

func frameMatches(x *regexp.Regexp, f stacks.Frame) bool {
	return f.Func != "" && (x.MatchString(f.Func) || x.MatchString(stacks.CallName(f.Func)))
}

// allMatchFrames: every regexp matches a frame of one of the thread's
// stacks (the same sample).
func allMatchFrames(res []*regexp.Regexp, t *stacks.Thread) bool {
	for _, st := range threadFrames(t) {
		all := len(st) > 0
		for _, x := range res {
			hit := false
			for _, f := range st {
				if frameMatches(x, f) {
					hit = true
					break
				}
			}
			if !hit {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func anyThreadFrame(x *regexp.Regexp, procs []*stacks.Process) (*stacks.Thread, bool) {
	for _, p := range procs {
		for _, t := range p.Threads {
			for _, st := range threadFrames(t) {
				for _, f := range st {
					if frameMatches(x, f) {
						return t, true
					}
				}
			}
		}
	}
	return nil, false
}

func anyModule(x *regexp.Regexp, procs []*stacks.Process) (string, bool) {
	for _, p := range procs {
		for _, m := range p.Modules {
			if x.MatchString(m.Path) {
				return m.Path, true
			}
		}
		if p.Fork != nil {
			for _, m := range p.Fork.ParentModules {
				if x.MatchString(m) {
					return m, true
				}
			}
		}
		for _, t := range p.Threads {
			for _, st := range threadFrames(t) {
				for _, f := range st {
					if f.Module != "" && x.MatchString(f.Module) {
						return f.Module, true
					}
				}
			}
		}
	}
	return "", false
}

func quoteAll(xs []string) string {
	var out []string
	for _, x := range xs {
		out = append(out, "`"+x+"`")
	}
	return strings.Join(out, ", ")
}
