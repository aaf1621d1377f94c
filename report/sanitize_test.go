package report

import "testing"

func TestSanitize(t *testing.T) {
	cases := map[string]string{
		"worker-1":                "worker-1",
		"\x1b]52;c;ZXZpbA==\a":    `\x1b]52;c;ZXZpbA==\x07`,
		"a\x9bb":                  "a\uFFFDb", // a lone 0x9b byte is invalid UTF-8
		"a\u009bb":                `a\x9bb`,   // the C1 CSI rune
		"bidi\u202eevil":          `bidi\u202eevil`,
		"std::mutex::lock()":      "std::mutex::lock()",
		"tab\tnewline\n":          `tab\x09newline\x0a`,
		string([]byte{0xff, 'x'}): "\uFFFDx",
	}
	for in, want := range cases {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}
