package stacks

import (
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// docker compose puts its service's name before each line a container
// writes (`docker compose up`, `docker compose logs`): "web_1  | "
// (Compose v1) or "web-1  | " (v2), the name padded to the widest of the
// services. A dump a container printed comes pasted with it on every
// line (empirica#155).

// composeRE is the prefix: a container name ending in its replica
// number, blanks, the bar, and the blank after it (absent on an empty
// line, where the log's own blanks are trimmed).
var composeRE = lazyre.New(`^[A-Za-z0-9][\w.-]{0,62}[_-]\d{1,4} +\|(?: |$)`)

// composePrefix removes docker compose's service prefix from s.
func (rp *repairer) composePrefix(no int, s string) string {
	if len(s) < 5 || !isAlnum(s[0]) {
		return s
	}
	bar := strings.IndexByte(s[:min(len(s), 80)], '|')
	if bar < 4 || s[bar-1] != ' ' || !isDigit(s[bar-2]) && s[bar-2] != ' ' {
		return s // most lines end here, before the regexp
	}
	m := composeRE.FindStringIndex(s)
	if m == nil {
		return s
	}
	rp.fixed(no, "docker compose's service prefixes ('web_1  | ') removed")
	return s[m[1]:]
}

func isAlnum(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
