package stacks

import "regexp"

var (
	goHeaderRE    = regexp.MustCompile(`goroutine \d+ (?:gp=0x[0-9a-f]+ m=(?:\d+|nil) (?:mp=0x[0-9a-f]+ )?)?\[[^\]\n]{1,200}\]:`)
	goCreatedByRE = regexp.MustCompile(`(?m)^[ \t>]*created by \S`)
	goLocationRE  = regexp.MustCompile(`\.(?:go|s):\d+ \+0x[0-9a-f]+`)
)

func init() {
	registerFormat(&Format{
		Name: "goroutines",
		Sniff: func(head []byte) int {
			return 3*len(goHeaderRE.FindAllIndex(head, 20)) + len(goCreatedByRE.FindAllIndex(head, 20)) +
				len(goLocationRE.FindAllIndex(head, 40))
		},
		Parse: ParseGoroutines,
	})
}
