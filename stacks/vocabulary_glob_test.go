package stacks

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// globMatch answers as the (?i) regular expression each glob of the
// table was compiled to before: on every glob of vocabulary.json against
// the table's own names, each glob filled in, case-swapped and cut, and
// random strings of the globs' letters.
func TestGlobMatchAsRegexp(t *testing.T) {
	v, err := ParseVocabulary(vocabularyJSON)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range v.exact {
		names = append(names, name, strings.ToUpper(name))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, g := range v.globs {
		for _, fill := range []string{"", "x", "::", "Mutex::lock", "*", "a*b"} {
			n := strings.ReplaceAll(g.pattern, "*", fill)
			names = append(names, n, strings.ToUpper(n), n[:len(n)/2], n+"x", "x"+n)
		}
		b := []byte(strings.ReplaceAll(g.pattern, "*", ""))
		for range 5 {
			r := make([]byte, rng.IntN(len(b)+8))
			for i := range r {
				if len(b) > 0 {
					r[i] = b[rng.IntN(len(b))]
				}
			}
			names = append(names, string(r))
		}
	}
	for _, g := range v.globs {
		parts := strings.Split(g.pattern, "*")
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		re := regexp.MustCompile("(?i)^" + strings.Join(parts, ".*") + "$")
		for _, n := range names {
			if got, want := globMatch(g.pattern, n), re.MatchString(n); got != want {
				t.Fatalf("globMatch(%q, %q) = %v, the regexp says %v", g.pattern, n, got, want)
			}
		}
	}
	t.Logf("%d globs x %d names", len(v.globs), len(names))
}
