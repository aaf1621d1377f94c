package stacks

import "regexp"

var (
	gdbFrameRE  = regexp.MustCompile(`(?m)^[ \t>]*#\d+\s+(?:0x[0-9a-f]+ in )?\S.*(?: at \S+:\d+| from \S+| \(\))`)
	gdbThreadRE = regexp.MustCompile(`(?m)^[ \t>]*Thread \d+ \((?:Thread 0x[0-9a-f]+ )?\(?LWP \d+\)`)
	// a row of `info threads`: "  2    Thread 0x7f… (LWP 29375) "name" frame"
	gdbInfoRowRE = regexp.MustCompile(`(?m)^[ \t>]*(?:\* *)?\d+ +Thread 0x[0-9a-f]+ \(LWP \d+\)(?: "[^"\n]*")? +\S`)
)

func init() {
	registerFormat(&Format{
		Name: "gdb",
		Sniff: func(head []byte) int {
			return 2*len(gdbThreadRE.FindAllIndex(head, 20)) + len(gdbFrameRE.FindAllIndex(head, 40)) +
				2*len(gdbInfoRowRE.FindAllIndex(head, 20))
		},
		Parse: ParseGDB,
	})
}
