package report

import (
	"strconv"

	"github.com/hangdoc/hangdoc/heuristics"
)

// hintText says a diagnosis's hint in words: the command to type and
// what it would show ("run `hangdoc attach --tree 400` to follow the
// wait"). The heuristics give the step as data; only the report knows
// hangdoc's command line.
func hintText(h heuristics.Hint) string {
	pid := "PID"
	if h.Pid > 0 {
		pid = strconv.Itoa(h.Pid)
	}
	switch h.Action {
	case heuristics.HintAttach:
		cmd := "hangdoc attach"
		if h.Tree {
			cmd += " --tree"
		}
		if h.Samples > 0 {
			cmd += " --samples " + strconv.Itoa(h.Samples)
		}
		return "run `" + cmd + " " + pid + "` " + h.Why
	case heuristics.HintGoroutineDump:
		return "send it SIGQUIT (`kill -QUIT " + pid + "`) and run `hangdoc analyze` on the goroutine dump it prints " + h.Why
	}
	return h.Why
}
