package stacks

import (
	"strings"
	"testing"
)

func TestMiriGoldens(t *testing.T) { checkDumpGoldens(t, "miri", ParseMiri, 0) }

func FuzzParseMiri(f *testing.F) {
	fuzzDumps(f, "miri", ParseMiri, nil,
		"error: the evaluated program deadlocked\n  --> src/main.rs:4:5\n   |\n   = note: BACKTRACE on thread `worker`:\n   = note: inside `std::sys::pal::unix::futex::futex_wait` at lib/futex.rs:80:21: 80:22\n   = note: inside closure at src/main.rs:9:9: 9:20\nnote: inside `main`\n")
}

// TestMiriThreads: one thread an error block, named by its BACKTRACE
// line, frames innermost first; a name cut by the paste is noted as cut.
// (Hand-written after miri's diagnostics.rs and the pastes in
// testdata/dumps/miri.)
func TestMiriThreads(t *testing.T) {
	in := "error: the evaluated program deadlocked\n  --> lib/futex.rs:80:21\n   |\n80 |   )\n   |   ^ this thread got stuck here\n   |\n" +
		"   = note: BACKTRACE:\n   = note: inside `std::sys::pal::unix::futex::futex_wait` at lib/futex.rs:80:21: 80:22\n   = note: inside `std::sync::Mutex::<i32>::lock` at lib/mutex.rs:1:1: 1:2\nnote: inside `main`\n   --> src/main.rs:4:5\n\n" +
		"error: the evaluated program deadlocked\n   = note: BACKTRACE on thread `worker`:\n   = note: inside `std::thread::park` at lib/thread.rs:9:9: 9:10\n   = note: inside `std::sync::mpsc::Recei"
	snap, skipped, err := ParseMiri(strings.NewReader(in))
	if err != nil || len(skipped) > 0 {
		t.Fatalf("err %v, skipped %v", err, skipped)
	}
	ths := snap.Processes[0].Threads
	if len(ths) != 2 || ths[0].Name != "main" || ths[1].Name != "worker" {
		t.Fatalf("threads %+v", ths)
	}
	if st := ths[0].Stack; len(st) != 3 || st[0].Func != "std::sys::pal::unix::futex::futex_wait" || st[0].File != "lib/futex.rs" || st[0].Line != 80 || st[2].Func != "main" {
		t.Errorf("main's stack %+v", st)
	}
	if !FrameCut(ths[1], 1) || FrameCut(ths[1], 0) || FrameCut(ths[0], 2) {
		t.Errorf("cut marks: %q / %q", ths[0].Notes, ths[1].Notes)
	}
	// the same report twice: Miri names a thread once a run, so a name
	// that repeats begins another run (another process)
	block := "error: the evaluated program deadlocked\n   = note: BACKTRACE:\n   = note: inside `std::thread::park` at lib/thread.rs:9:9: 9:10\n"
	if twice, _, err := ParseMiri(strings.NewReader(block + block)); err != nil || len(twice.Processes) != 2 {
		t.Errorf("a report pasted twice: %v, %+v", err, twice)
	}
	if _, _, err := ParseMiri(strings.NewReader("thread 'main' panicked at src/main.rs:1:1\n")); err == nil {
		t.Error("a panic message read as a Miri deadlock")
	}
}
