package patient

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The Go patients under testdata/gorun print "stuck" (not "ready") once
// they are in the state to be looked at, and print every goroutine's
// stack on SIGQUIT. StartGo runs one; GoDump takes its goroutine dump.

// goStderrMax keeps the whole goroutine dump of the leak patient (10,000
// goroutines, about 7 MB).
const goStderrMax = 64 << 20

// StartGo runs the Go patient bin (built by BuildGo) with env added to
// the test's environment, in a process group of its own, and waits up to
// 10 s for its "stuck" line. Like Start, it registers a cleanup that
// SIGKILLs the group and reaps the patient, and the patient dies with
// the test binary. Stderr keeps everything the patient writes.
func StartGo(t testing.TB, bin string, env ...string) *Proc {
	t.Helper()
	return launch(t, launchSpec{argv: []string{bin}, env: append(goPatientEnv(), env...), stderrMax: goStderrMax, ready: "stuck"})
}

// goPatientEnv is the test's environment without the variables that
// change what a Go program prints on SIGQUIT.
func goPatientEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GOTRACEBACK=") || strings.HasPrefix(kv, "GODEBUG=") || strings.HasPrefix(kv, "HANGDOC_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// GoDump runs the Go patient bin until it is stuck, waits settle (the
// GC the patients run every 500 ms then records how long each goroutine
// has waited), sends SIGQUIT and returns the goroutine dump the runtime
// wrote on stderr with GOTRACEBACK=all, as a user would paste it.
func GoDump(t testing.TB, bin string, settle time.Duration, env ...string) []byte {
	t.Helper()
	p := StartGo(t, bin, append([]string{"GOTRACEBACK=all"}, env...)...)
	time.Sleep(settle)
	return p.QuitDump(t)
}

// QuitDump sends SIGQUIT to a Go patient started by StartGo (with
// GOTRACEBACK=all in env to see every goroutine) and returns the
// goroutine dump the runtime wrote on stderr before exiting.
func (p *Proc) QuitDump(t testing.TB) []byte {
	t.Helper()
	if err := p.Signal(syscall.SIGQUIT); err != nil {
		t.Fatalf("patient %d: SIGQUIT: %v", p.Pid, err)
	}
	ws := p.Wait(t, 30*time.Second)
	if !ws.Exited() || ws.ExitStatus() != 2 {
		t.Fatalf("patient %d: after SIGQUIT, wait status %v, not exit 2 (the runtime's dump exit)\nstderr:\n%s", p.Pid, ws, p.Stderr())
	}
	return []byte(p.Stderr())
}
