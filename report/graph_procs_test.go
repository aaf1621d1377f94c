package report

import (
	"bytes"
	"os"
	"regexp"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// TestGraphKeepsProcessesApart: two processes of one pid in a paste (a
// hangdoc snapshot of a live ABBA patient pasted twice: both one pid, the
// same tids and mutex addresses, owners read; a real jstack dump twice:
// both pid 0; the same for goroutines) are drawn as
// two clusters, each with its own thread and lock nodes and its own
// edges. By pid and tid the second cluster had the same id and the same
// nodes as the first, and its waits were drawn on the first's nodes.
// One dump alone keeps its ids (the goldens).
func TestGraphKeepsProcessesApart(t *testing.T) {
	for _, name := range []string{"testdata/snapshots/abba.json", "../testdata/dumps/jstack/monitor_abba.txt", "testdata/snapshots/go_abba.json"} {
		dump, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		one := graphOf(t, dump)
		snap, two := graphOf2(t, append(append([]byte{}, dump...), dump...))
		if len(snap.Processes) != 2 || snap.Processes[0].Pid != snap.Processes[1].Pid {
			t.Fatalf("%s twice: want two processes of one pid, got %d", name, len(snap.Processes))
		}
		if len(one.clusters) != 1 || len(two.clusters) != 2 {
			t.Fatalf("%s: %d cluster(s) alone, %d twice; want 1 and 2", name, len(one.clusters), len(two.clusters))
		}
		if two.clusters[0].id == two.clusters[1].id {
			t.Errorf("%s twice: both clusters are %s", name, two.clusters[0].id)
		}
		in := map[int]int{}
		for _, c := range two.clusters {
			if len(c.nodes) != len(one.clusters[0].nodes) {
				t.Errorf("%s twice: cluster %s has %d nodes, want %d as alone", name, c.id, len(c.nodes), len(one.clusters[0].nodes))
			}
			for _, i := range c.nodes {
				in[i]++
			}
		}
		for i, n := range in {
			if n > 1 {
				t.Errorf("%s twice: node %s drawn in %d clusters", name, two.nodes[i].id, n)
			}
		}
		if len(two.nodes) != 2*len(one.nodes) || len(two.edges) != 2*len(one.edges) {
			t.Errorf("%s twice: %d nodes, %d edges; want twice %d and %d", name, len(two.nodes), len(two.edges), len(one.nodes), len(one.edges))
		}
		for i := range one.nodes {
			if one.nodes[i].id != two.nodes[i].id {
				t.Errorf("%s: the first process's node %s is %s when pasted twice", name, one.nodes[i].id, two.nodes[i].id)
			}
		}
		var dot bytes.Buffer
		res := heuristics.Diagnose(snap, heuristics.Options{})
		if err := Dot(&dot, res); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range regexp.MustCompile(`subgraph (\w+)`).FindAllStringSubmatch(dot.String(), -1) {
			if seen[m[1]] {
				t.Errorf("%s twice: DOT subgraph %s twice", name, m[1])
			}
			seen[m[1]] = true
		}
	}
}

func graphOf(t *testing.T, in []byte) *waitGraph {
	_, g := graphOf2(t, in)
	return g
}

func graphOf2(t *testing.T, in []byte) (*stacks.Snapshot, *waitGraph) {
	t.Helper()
	snap, _, _, err := stacks.Parse(bytes.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	res := heuristics.Diagnose(snap, heuristics.Options{})
	return snap, buildWaitGraph(res)
}
