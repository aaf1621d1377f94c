package attach

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"github.com/hangdoc/hangdoc/stacks"
)

// readStop says what holds a process that is stopped (state T or t) or
// traced by another process, or nil when it is neither. It is read when
// the target is opened, before hangdoc traces any of its threads, so a
// tracer it names is someone else.
func readStop(pid int, st taskStat) *stacks.Stop {
	tracer := tracerPid(pid)
	if tracer == os.Getpid() {
		tracer = 0
	}
	if st.State != 'T' && st.State != 't' && tracer == 0 {
		return nil
	}
	s := &stacks.Stop{TracerPid: tracer}
	if tracer != 0 {
		if ts, err := readStat(tracer, tracer); err == nil {
			s.Tracer = ts.Name
		}
	}
	s.BackgroundTTY = st.TTY != 0 && st.Tpgid != st.Pgrp
	return s
}

// tracerPid is the TracerPid line of /proc/PID/status: 0 when untraced
// or unreadable.
func tracerPid(pid int) int {
	b, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("TracerPid:")); ok {
			n, _ := strconv.Atoi(string(bytes.TrimSpace(v)))
			return n
		}
	}
	return 0
}
