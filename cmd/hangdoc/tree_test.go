package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// startTreePipe starts the tree_pipe patient (a parent waiting for a
// worker stuck on an inherited lock, and a client reading a pipe only the
// worker holds) and returns it with the worker's and the client's pids.
// Start kills the patient's process group, both children included, when
// the test ends; each child is also killed by pid, in case.
func startTreePipe(t *testing.T) (p *patient.Proc, child, client int) {
	t.Helper()
	patient.RequirePtrace(t)
	p = patient.Start(t, patient.Build(t, "tree_pipe.c", patient.O2g...))
	child, client = p.Int(t, "child"), p.Int(t, "client")
	t.Cleanup(func() {
		p.Kill(t)
		for _, pid := range []int{child, client} {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return p, child, client
}

func TestAttachTreeJSON(t *testing.T) {
	p, child, client := startTreePipe(t)
	out, stderr, err := run("attach", "--tree", "--samples", "2", "--interval", "50ms", "--format", "json", strconv.Itoa(p.Pid))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var doc struct {
		stacks.Snapshot
		Diagnoses []struct {
			ID       string `json:"id"`
			Pids     []int  `json:"pids"`
			Tids     []int  `json:"tids"`
			Summary  string `json:"summary"`
			Deadlock bool   `json:"deadlock"`
		} `json:"diagnoses"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var pids []int
	for _, proc := range doc.Processes {
		pids = append(pids, proc.Pid)
	}
	if !slices.Equal(pids, []int{p.Pid, min(child, client), max(child, client)}) {
		t.Fatalf("processes %v, want the parent %d then its children %d and %d (one snapshot)", pids, p.Pid, child, client)
	}
	for _, proc := range doc.Processes {
		if proc.Pid != client {
			continue
		}
		if w := proc.Threads[0].Wait; w == nil || !slices.Equal(w.PeerPids, []int{child}) {
			t.Errorf("client %d: wait %+v, want peer_pids [%d] (the pipe's only writer)", client, w, child)
		}
	}
	var ids []string
	for _, d := range doc.Diagnoses {
		ids = append(ids, d.ID)
	}
	if !slices.Equal(ids, []string{"fork-inherited-lock", "waiting-on-process", "waiting-on-process"}) {
		t.Fatalf("diagnoses %v, want fork-inherited-lock then two waiting-on-process", ids)
	}
	for _, d := range doc.Diagnoses[1:] {
		if !d.Deadlock || !slices.Contains(d.Pids, child) || !strings.Contains(d.Summary, "stuck in fork-inherited-lock") {
			t.Errorf("waiting-on-process %v does not link to %d's deadlock: %s", d.Pids, child, d.Summary)
		}
	}
}

func TestAttachTreeText(t *testing.T) {
	p, child, client := startTreePipe(t)
	out, _, err := run("attach", "--tree", "--samples", "1", strconv.Itoa(p.Pid))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out, "\n")
	t.Logf("first line: %s", first)
	if !strings.HasPrefix(first, "fork-inherited-lock") || !strings.Contains(first, strconv.Itoa(child)) {
		t.Errorf("first line %q, want the worker %d's fork-inherited-lock", first, child)
	}
	for _, want := range []string{
		"waiting-on-process (high confidence): pid " + strconv.Itoa(p.Pid),
		"waiting-on-process (high confidence): pid " + strconv.Itoa(client),
		"pid " + strconv.Itoa(client) + " ", // its stacks are in the report
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// Without --tree only the process named is sampled: the parent waits for
// a child that is not in the snapshot, and the report says how to follow.
func TestAttachWithoutTreeSuggestsIt(t *testing.T) {
	p, _, _ := startTreePipe(t)
	out, _, err := run("attach", "--samples", "1", strconv.Itoa(p.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "next: run `hangdoc attach --tree "+strconv.Itoa(p.Pid)+"` to follow the wait") {
		t.Errorf("no hint to attach the tree:\n%s", out)
	}
}

// A descendant that is a zombie is left out, said on stderr; the rest is
// sampled.
func TestAttachTreeLeavesOutZombies(t *testing.T) {
	patient.RequirePtrace(t)
	// sh starts a child that exits at once and is not reaped while sh
	// sleeps in the foreground (it reaps only when it waits).
	p := patient.Start(t, "sh", "-c", "sh -c 'exit 0' & echo ready; exec sleep 100")
	var zombie int
	end := time.Now().Add(5 * time.Second)
	for zombie == 0 && time.Now().Before(end) {
		for _, c := range treeChildren(p.Pid) {
			if patient.State(c) == "Z" {
				zombie = c
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if zombie == 0 {
		t.Skip("no zombie child to leave out (the shell reaped it)")
	}
	out, stderr, err := run("attach", "--tree", "--samples", "1", "--format", "json", strconv.Itoa(p.Pid))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "left out") || !strings.Contains(stderr, "pid "+strconv.Itoa(zombie)) || !strings.Contains(stderr, "zombie") {
		t.Errorf("stderr does not say the zombie %d was left out:\n%s", zombie, stderr)
	}
	if !strings.Contains(out, `"pid": `+strconv.Itoa(p.Pid)) {
		t.Errorf("the tree's root %d is not in the report", p.Pid)
	}
}

func TestAttachTreeNoSuchProcess(t *testing.T) {
	_, _, err := run("attach", "--tree", "99999999")
	if err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Fatalf("got %v", err)
	}
	var ue usageError
	if _, _, err := run("attach", "--tree"); !errors.As(err, &ue) {
		t.Fatalf("attach --tree without a pid: %v, want a usage error", err)
	}
}

func treeChildren(pid int) []int {
	var out []int
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// TestAttachTreeGraph: the dot and mermaid graphs of the tree_pipe
// patient draw the waits the text verdicts name — the parent's wait4 on
// the stuck worker (the pid its wait4 names, not every child) and the
// client's read of the pipe only the worker writes — because they draw
// the graph Diagnose read, not one of their own.
func TestAttachTreeGraph(t *testing.T) {
	p, child, client := startTreePipe(t)
	pid := strconv.Itoa(p.Pid)
	dot, _, err := run("attach", "--tree", "--samples", "1", "--format", "dot", pid)
	if err != nil {
		t.Fatal(err)
	}
	edges := map[string]bool{}
	for _, l := range strings.Split(dot, "\n") {
		if strings.Contains(l, " -> ") {
			edges[strings.TrimSpace(l)] = true
		}
	}
	hasEdge := func(from, label, toCluster string) bool {
		for e := range edges {
			if strings.HasPrefix(e, "t"+from+" -> ") && strings.Contains(e, `label="`+label+`"`) && strings.Contains(e, "lhead=cluster_proc"+toCluster) {
				return true
			}
		}
		return false
	}
	if !hasEdge(pid, "waits for child", strconv.Itoa(child)) {
		t.Errorf("dot: no wait4 edge from the parent %s to the worker %d:\n%s", pid, child, dot)
	}
	if !hasEdge(strconv.Itoa(client), "reads a pipe written by", strconv.Itoa(child)) {
		t.Errorf("dot: no pipe edge from the client %d to the worker %d:\n%s", client, child, dot)
	}
	for e := range edges {
		if strings.Contains(e, "waits for child") && (strings.Contains(e, "p"+strconv.Itoa(client)) || strings.Contains(e, "cluster_proc"+strconv.Itoa(client))) {
			t.Errorf("dot: a wait4 edge to the client %d, which the parent's wait4 does not wait for: %s", client, e)
		}
	}
	md, _, err := run("attach", "--tree", "--samples", "1", "--format", "markdown", pid)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`t%d -->|"reads a pipe written by"| proc%d`, client, child); !strings.Contains(md, want) {
		t.Errorf("mermaid: no %q:\n%s", want, md)
	}
	if bad := fmt.Sprintf(`-->|"waits for child"| p%d`, client); strings.Contains(md, bad) {
		t.Errorf("mermaid: a wait4 edge to the client: %q", bad)
	}
}
