// Package lazyre holds regular expressions that compile on first use.
//
// hangdoc reads a score of dump formats, each with its own expressions:
// compiled at start-up, the 200-odd of them took 40% of the run of
// `hangdoc analyze` on a small file (about 30 ms on this machine, most
// of it page faults of the 2.8 MB they allocate) and were resident for
// the whole run, though one dump reads with one format's few. An RE
// compiles when first used, once, safely from any goroutine.
package lazyre

import (
	"fmt"
	"regexp"
	"sync"
)

// RE is a regular expression compiled on first use. Its methods are
// those of regexp.Regexp the callers use.
type RE struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

var (
	allMu sync.Mutex
	all   []*RE
)

// New is regexp.MustCompile, deferred: a bad expression panics on first
// use, so each package's tests compile All. Call it only to initialise
// package-level variables (each RE is kept in All for good).
func New(expr string) *RE {
	r := &RE{expr: expr}
	allMu.Lock()
	all = append(all, r)
	allMu.Unlock()
	return r
}

// All is every RE made so far, for tests that compile them.
func All() []*RE {
	allMu.Lock()
	defer allMu.Unlock()
	return append([]*RE(nil), all...)
}

// Compile compiles r now, saying what is wrong with a bad expression
// instead of panicking.
func (r *RE) Compile() error {
	_, err := regexp.Compile(r.expr)
	return err
}

// Regexp is the compiled expression.
func (r *RE) Regexp() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re
}

func (r *RE) String() string { return r.expr }

func (r *RE) MatchString(s string) bool      { return r.Regexp().MatchString(s) }
func (r *RE) Match(b []byte) bool            { return r.Regexp().Match(b) }
func (r *RE) FindString(s string) string     { return r.Regexp().FindString(s) }
func (r *RE) FindStringIndex(s string) []int { return r.Regexp().FindStringIndex(s) }
func (r *RE) FindStringSubmatch(s string) []string {
	return r.Regexp().FindStringSubmatch(s)
}
func (r *RE) FindStringSubmatchIndex(s string) []int {
	return r.Regexp().FindStringSubmatchIndex(s)
}
func (r *RE) FindSubmatch(b []byte) [][]byte { return r.Regexp().FindSubmatch(b) }
func (r *RE) FindAllIndex(b []byte, n int) [][]int {
	return r.Regexp().FindAllIndex(b, n)
}
func (r *RE) ReplaceAllString(src, repl string) string {
	return r.Regexp().ReplaceAllString(src, repl)
}
func (r *RE) ReplaceAll(src, repl []byte) []byte { return r.Regexp().ReplaceAll(src, repl) }
func (r *RE) Split(s string, n int) []string     { return r.Regexp().Split(s, n) }

// CompileAll compiles every RE made so far (those of every package the
// caller links): the first bad one's error, with its expression.
func CompileAll() error {
	for _, r := range All() {
		if err := r.Compile(); err != nil {
			return fmt.Errorf("lazyre: %q: %w", r.expr, err)
		}
	}
	return nil
}
