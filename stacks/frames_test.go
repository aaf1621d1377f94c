package stacks

import "testing"

func TestFramesGoldens(t *testing.T) { checkDumpGoldens(t, "frames", ParseFrames, 0) }

// TestFramesTree: a tree drawn by hand, innermost call on top, is one
// thread per block; DDT's CSV tree gives one thread per leaf, innermost
// first.
func TestFramesTree(t *testing.T) {
	snap, _ := parseStoredDump(t, "frames", "clickhouse_tree.txt", ParseFrames)
	if n := len(snap.Processes[0].Threads); n != 2 {
		t.Fatalf("%d threads", n)
	}
	checkFuncs(t, "first", snap.Processes[0].Threads[0].Stack, "runtime_SemacquireMutex", "main.(*Clickhouse).GetNextServer", "main.(*FileDumper).ProcessNextDump")
	snap, _ = parseStoredDump(t, "frames", "ddt_merged_csv.txt", ParseFrames)
	th := snap.Processes[0].Threads[0]
	if th.Stack[0].Func != "mca_btl_sm_check_fboxes" || th.Stack[len(th.Stack)-1].Func != "main" || th.Name != "1 processes" {
		t.Errorf("first DDT leaf: %q %q", th.Name, funcs(th.Stack))
	}
}

func FuzzParseFrames(f *testing.F) {
	fuzzDumps(f, "frames", ParseFrames, nil, "a\n └─ b\n", "1,1,main (a.c:1)\n1,1,  f\n")
}
