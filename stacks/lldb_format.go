package stacks

import "github.com/hangdoc/hangdoc/internal/lazyre"

var (
	lldbFrameRE  = lazyre.New(`(?m)^[ \t>]*(?:\* +)?frame #\d+: 0x[0-9a-fA-F]+\b`)
	lldbThreadRE = lazyre.New(`(?m)^[ \t>]*(?:\* +)?thread #\d+(?:, (?:name|queue|tid|stop reason) = |: tid = )`)
)

func init() {
	registerFormat(&Format{
		Name: "lldb",
		Sniff: func(head []byte) int {
			return 2*len(lldbThreadRE.FindAllIndex(head, 20)) + len(lldbFrameRE.FindAllIndex(head, 40))
		},
		Parse: ParseLLDB,
	})
}
