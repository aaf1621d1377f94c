package stacks

import (
	"bytes"
	"strings"
	"testing"
)

// seamDumps are stored dumps whose seams with another dump the splitter
// must tell (split.go): one of each tool's headers, and the pastes that
// begin or end without one.
var seamDumps = []string{
	"gdb/abba.txt", "gdb/pybt_sonic_mgmt_22212_pasted.md", "gdb/info_threads_icinga2_pasted.txt", "lldb/abba_tba.txt",
	"eu-stack/mutex_o2.txt", "goroutines/log_two_dumps.txt", "goroutines/abba_sigquit_crash.txt",
	"faulthandler/pyfork_lock_sigusr1.txt", "faulthandler/lock_timeout_repeat.txt", "py-spy/lock.txt",
	"jstack/intellij_pasted.txt", "crash-report/cwlutils_8badf00d.txt", "frames/rtklib_call_tree.txt",
	"go-deadlock/rwmutex_inconsistent_locking.txt", "spindump/mutex_o2_heavy.txt",
}

// FuzzSplit: a paste of several dumps, however their seams are cut,
// joined or doubled, holds what every reader promises. Seeds: each seam
// dump followed by the next and by itself (TestConcatenatedDumps checks
// what such pairs read as).
func FuzzSplit(f *testing.F) {
	for i, a := range seamDumps {
		x := seamDump(f, a)
		for _, b := range []string{seamDumps[(i+1)%len(seamDumps)], a} {
			in := x + seamDump(f, b)
			f.Add([]byte(in[:min(len(in), 32<<10)]))
		}
	}
	f.Fuzz(checkParse)
}

func seamDump(t testing.TB, name string) string {
	format, file, _ := strings.Cut(name, "/")
	b := readStoredDump(t, format, file)
	if !bytes.HasSuffix(b, []byte("\n")) {
		b = append(b, '\n')
	}
	return string(b)
}

// checkParse: Parse with detection gives a snapshot or an error, and
// what it gives holds every reader's promises (checkDumpResult).
func checkParse(t *testing.T, in []byte) {
	snap, skipped, _, err := Parse(bytes.NewReader(in), "")
	if err != nil && snap != nil {
		t.Fatalf("snapshot and error %v", err)
	}
	if err == nil {
		checkDumpResult(t, in, snap, skipped, nil)
	}
}
