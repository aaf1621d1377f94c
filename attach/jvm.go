package attach

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/stacks"
)

// A JVM's Java threads are not in its native stacks (libjvm's frames and
// the JIT's code are). Where the JDK's jcmd is on the PATH, they are read
// through it: `jcmd PID Thread.print -l` asks the JVM itself over its
// attach mechanism (a signal and a socket the JVM serves; nothing is
// written into its memory), after sampling, and its output is read as a
// jstack dump: Java threads with their monitors, j.u.c locks and owners.
// The native threads move to OSThreads. Without jcmd the report says it
// is a JVM and how to get its threads.

// jvmTimeout bounds the jcmd call: a JVM wedged at a safepoint never
// answers.
const jvmTimeout = 15 * time.Second

// isJVM says whether the process maps HotSpot (or OpenJ9).
func isJVM(paths []string) bool {
	for _, p := range paths {
		if strings.HasSuffix(p, "/libjvm.so") || strings.HasSuffix(p, "/libj9vm29.so") {
			return true
		}
	}
	return false
}

// jvmRuntime is a JVM: its Java threads replace the native ones once
// sampling is over (a core holds no way to ask the JVM).
type jvmRuntime struct{ noCore }

func (jvmRuntime) live(tg *target, _ Options) runtimeReader {
	if !isJVM(mappedPaths(tg.maps)) {
		return nil
	}
	return jvmReader{}
}

// jvmReader samples the native threads; its finish reads the Java ones.
type jvmReader struct{ nativeRuntime }

func (jvmReader) finish(tg *target, _ time.Duration, _ *stacks.Evidence) {
	if !tg.exited {
		tg.readJVM()
	}
}

// readJVM replaces the threads of a JVM with its Java threads, or notes
// how to get them.
func (tg *target) readJVM() {
	pid := strconv.Itoa(tg.pid)
	jcmd, err := exec.LookPath("jcmd")
	if err != nil {
		tg.proc.Notes = append(tg.proc.Notes, fmt.Sprintf("this is a JVM: its Java threads are not in the native stacks below; install the JDK's jcmd for hangdoc to read them, or run `jcmd %s Thread.print -l` (or `jstack -l %s`, or `kill -3 %s`: the dump goes to the JVM's stdout) and `hangdoc analyze` the output", pid, pid, pid))
		return
	}
	java, err := jvmThreads(jcmd, tg.pid)
	if err != nil {
		tg.proc.Notes = append(tg.proc.Notes, fmt.Sprintf("this is a JVM: `jcmd %s Thread.print -l` failed (%v); run it (or `jstack -l %s`) as the JVM's user and `hangdoc analyze` the output", pid, err, pid))
		return
	}
	tg.proc.OSThreads = tg.proc.Threads
	tg.proc.Threads = java.Threads
	if java.Runtime != "" {
		tg.proc.Runtime = java.Runtime
	}
	tg.proc.Notes = append(tg.proc.Notes, fmt.Sprintf("Java threads read through `jcmd %s Thread.print -l` (the JVM's own attach mechanism), after sampling; the native threads are in os_threads (--threads)", pid))
}

// jvmThreads runs jcmd PID Thread.print -l and reads its output.
func jvmThreads(jcmd string, pid int) (*stacks.Process, error) {
	ctx, cancel := context.WithTimeout(context.Background(), jvmTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, jcmd, strconv.Itoa(pid), "Thread.print", "-l")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String() + " " + out.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s", clipLine(msg))
	}
	snap, _, err := stacks.ParseJstack(&out)
	if err != nil {
		return nil, err
	}
	return snap.Processes[0], nil
}

// clipLine keeps the first line of a tool's message, at most 200 bytes.
func clipLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
