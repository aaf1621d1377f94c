package stacks

import "github.com/hangdoc/hangdoc/internal/lazyre"

var (
	gdbFrameRE  = lazyre.New(`(?m)^[ \t>]*#\d+\s+(?:0x[0-9a-f]+ in )?\S.*(?: at \S+:\d+| from \S+| \(\))`)
	gdbThreadRE = lazyre.New(`(?m)^[ \t>]*Thread \d+ \((?:Thread 0x[0-9a-f]+ )?\(?LWP \d+\)`)
	// a row of `info threads`: "  2    Thread 0x7f… (LWP 29375) "name" frame"
	gdbInfoRowRE = lazyre.New(`(?m)^[ \t>]*(?:\* *)?\d+ +Thread 0x[0-9a-f]+ \(LWP \d+\)(?: "[^"\n]*")? +\S`)
	// py-bt's header: Python's own tracebacks say "most recent call
	// last", faulthandler's name a thread or say "Stack"
	gdbPyBTRE = lazyre.New(`(?m)^[ \t>]*Traceback \(most recent call first\):`)
	// a py-bt frame: the python-traceback format counts these too
	gdbPyFrameRE = lazyre.New(`(?m)^[ \t>]*File "[^"\n]*", line \d+, in \S`)
)

func init() {
	registerFormat(&Format{
		Name: "gdb",
		Sniff: func(head []byte) int {
			n := 2*len(gdbThreadRE.FindAllIndex(head, 20)) + len(gdbFrameRE.FindAllIndex(head, 40)) +
				2*len(gdbInfoRowRE.FindAllIndex(head, 20))
			if pyBT := len(gdbPyBTRE.FindAllIndex(head, 20)); pyBT > 0 {
				// py-bt's frames are Python's: outscore a traceback reader
				n += 2*pyBT + len(gdbPyFrameRE.FindAllIndex(head, 40))
			}
			return n
		},
		Parse: ParseGDB,
	})
}
