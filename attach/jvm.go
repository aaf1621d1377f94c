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
// the JIT's code are). With Options.JVM (hangdoc attach --jvm) and the
// JDK's jcmd on the PATH, they are read through it: `jcmd PID
// Thread.print -l` asks the JVM itself over its attach mechanism, after
// sampling, and its output is read as a jstack dump: Java threads with
// their monitors, j.u.c locks and owners. The native threads move to
// OSThreads. It is opt-in because it changes the JVM, which hangdoc
// otherwise never does: jcmd creates .attach_pidPID and sends SIGQUIT, and
// the JVM starts an "Attach Listener" thread and serves the socket
// /tmp/.java_pidPID, both for the rest of its life (TestAttachJVMOptIn
// measures it: one thread more, the socket there). Without it the report
// says it is a JVM and how to get its threads.

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

func (jvmRuntime) live(tg *target, o Options) runtimeReader {
	if !isJVM(mappedPaths(tg.maps)) {
		return nil
	}
	return jvmReader{jcmd: o.JVM}
}

// jvmReader samples the native threads; its finish reads the Java ones
// when jcmd is allowed.
type jvmReader struct {
	nativeRuntime
	jcmd bool
}

func (r jvmReader) finish(tg *target, _ time.Duration, _ *stacks.Evidence) {
	if !tg.exited {
		tg.readJVM(r.jcmd)
	}
}

// readJVM replaces the threads of a JVM with its Java threads, or notes
// how to get them.
func (tg *target) readJVM(allowed bool) {
	pid := strconv.Itoa(tg.pid)
	if !allowed {
		tg.proc.Notes = append(tg.proc.Notes, fmt.Sprintf("this is a JVM: its Java threads are not in the native stacks below; `hangdoc attach --jvm %s` reads them through the JDK's jcmd (the JVM then starts its Attach Listener thread and /tmp/.java_pid%s socket, which stay), or run `jcmd %s Thread.print -l` (or `jstack -l %s`) and `hangdoc analyze` the output", pid, pid, pid, pid))
		return
	}
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
