package report

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize makes a string that came from outside (a thread name, a
// symbol, a path, pasted text) safe to print on a terminal: control
// characters, escape sequences included, become visible \x.. escapes and
// invalid UTF-8 becomes U+FFFD. A thread named "\x1b]52;…" must not
// reach the user's clipboard.
func Sanitize(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
		case isControl(r):
			const hex = "0123456789abcdef"
			if r < 0x100 {
				b.WriteString(`\x`)
				b.WriteByte(hex[r>>4])
				b.WriteByte(hex[r&0xf])
			} else {
				b.WriteString(`\u`)
				for shift := 12; shift >= 0; shift -= 4 {
					b.WriteByte(hex[(r>>shift)&0xf])
				}
			}
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

// isControl covers C0, DEL, C1 (0x9b is a one-byte CSI on some terminals)
// and the bidirectional overrides that can reorder what a reader sees.
func isControl(r rune) bool {
	return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
