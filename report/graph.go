package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// The wait-for graph as the graph renderers draw it. One function,
// buildWaitGraph, reads heuristics' graph into this model; Dot and
// Mermaid (and the markdown report, through Mermaid) only print it.
//
// Node ids are made of letters, digits and "_" only, from numbers (tids,
// pids, addresses), never from a name, so they need no escaping in DOT or
// Mermaid. Labels are the raw strings from the snapshot: each renderer
// sanitises and escapes them for its own syntax.

// nodeKind says how a node is drawn.
type nodeKind int

const (
	nodeThread  nodeKind = iota // a sampled thread: a box
	nodeMutex                   // a mutex some thread waits for: an ellipse
	nodeGhost                   // a thread id not in the snapshot (exited, the parent's at fork, not sampled)
	nodeProcess                 // a child process a wait4 waits for
)

// emptyGraph labels a graph with no edges: a snapshot with no mutex
// owner, join or child wait read (a pasted dump's waits inferred from
// frame arguments are not in heuristics' graph).
const emptyGraph = "no wait recorded between threads (mutex owner, join, child)"

// maxLabel is the most runes a label line keeps in a graph; a C++ symbol
// can be hundreds long.
const maxLabel = 60

type graphNode struct {
	id    string
	kind  nodeKind
	lines []string        // raw label lines, from the target
	proc  *stacks.Process // the process (cluster) it is drawn in; nil for none
}

type graphEdge struct {
	from, to string
	label    string // ours: "waits for", "held by", …
	hot      bool   // on the top diagnosis's cycle or chain
	// toCluster: to is a cluster's id (a wait4 on a child process that is
	// in the snapshot), not a node's.
	toCluster bool
}

type graphCluster struct {
	id    string
	pid   int
	label string // raw, from the target
	nodes []int  // indexes into waitGraph.nodes
}

// procIDs gives each process of a snapshot the part of its nodes' ids
// that tells it from another process of the same pid (two pastes without
// pids are both pid 0, two machines may reuse one), and each thread's
// tid that part where an earlier process has a thread of that tid: the
// first process of a pid, and the first thread of a tid, keep the bare
// numbers.
type procIDs struct {
	suffix map[*stacks.Process]string // "" for the first process of its pid, "_2" for the second…
	index  map[*stacks.Process]int
	tidIn  map[int]*stacks.Process // the first process with a thread of that tid
}

func newProcIDs(snap *stacks.Snapshot) procIDs {
	ids := procIDs{suffix: map[*stacks.Process]string{}, index: map[*stacks.Process]int{}, tidIn: map[int]*stacks.Process{}}
	seen := map[int]int{}
	for i, p := range snap.Processes {
		ids.index[p] = i
		if seen[p.Pid]++; seen[p.Pid] > 1 {
			ids.suffix[p] = "_" + strconv.Itoa(seen[p.Pid])
		}
		for _, t := range p.Threads {
			if ids.tidIn[t.Tid] == nil {
				ids.tidIn[t.Tid] = p
			}
		}
	}
	return ids
}

// thread is the id part of a thread of p with that tid.
func (ids procIDs) thread(p *stacks.Process, tid int) string {
	if q := ids.tidIn[tid]; q == nil || q == p {
		return strconv.Itoa(tid)
	}
	return strconv.Itoa(tid) + "_p" + strconv.Itoa(ids.index[p])
}

type waitGraph struct {
	clusters []graphCluster // processes that have nodes, in snapshot order
	nodes    []graphNode
	edges    []graphEdge // waits-for and held-by edges, in graph order
	index    map[string]int
	ids      procIDs
}

// buildWaitGraph draws the wait-for graph the diagnoses rest on (the
// Result of heuristics.Diagnose): a thread waits for a mutex, the mutex
// is held by a thread; a thread joins a thread; a thread waits for a
// child process, or on a pipe or socket another process holds the other
// end of. Only threads with a wait, and what they wait for, are drawn.
// The edges of the top diagnosis — its cycle, or else the waits of the
// threads it names — are hot.
func buildWaitGraph(res *heuristics.Result) *waitGraph {
	wg := &waitGraph{index: map[string]int{}}
	if res == nil || res.Snap == nil {
		return wg
	}
	snap := res.Snap
	wg.ids = newProcIDs(snap)
	var edges []heuristics.Edge
	if res.Graph != nil {
		edges = res.Graph.Edges
	}
	hot := hotThreads(res)
	hotLock := map[*heuristics.Lock]bool{}
	for _, e := range edges {
		if e.Kind == heuristics.EdgeMutex && hot[e.From.Thread] {
			hotLock[e.Lock] = true
		}
	}
	heldDrawn := map[*heuristics.Lock]bool{}
	for _, e := range edges {
		from := wg.thread(e.From)
		switch e.Kind {
		case heuristics.EdgeMutex:
			l := e.Lock
			m := wg.mutex(l)
			wg.edge(from, m, "waits for", hot[e.From.Thread])
			if heldDrawn[l] {
				continue
			}
			heldDrawn[l] = true
			if to, label := wg.owner(l); to != "" {
				wg.edge(m, to, label, hotLock[l])
			}
		case heuristics.EdgeJoin:
			to := ""
			if e.To.Thread != nil {
				to = wg.thread(e.To)
			} else {
				to = wg.ghost(e.From.Thread.Wait.JoinTid, e.From.Proc, "not in the snapshot")
			}
			wg.edge(from, to, "joins", hot[e.From.Thread])
		}
	}
	// Goroutines: Go records no owner, so a lock's holders are the
	// goroutines that may hold it, as the Go signatures inferred them.
	goHeld := map[string]bool{}
	for _, w := range res.GoWaits {
		from := wg.thread(w.Goroutine)
		obj := wg.goObject(w)
		wg.edge(from, obj, "waits for", hot[w.Goroutine.Thread])
		for _, h := range w.Holders {
			to := wg.thread(h)
			if !goHeld[obj+">"+to] {
				goHeld[obj+">"+to] = true
				wg.edge(obj, to, "may be held by", hot[w.Goroutine.Thread] && hot[h.Thread])
			}
		}
	}
	type procWait struct {
		heuristics.ProcessWait
		from string
		hot  bool
	}
	var waits []procWait
	for _, w := range res.ProcessWaits {
		waits = append(waits, procWait{w, wg.thread(w.From), hot[w.From.Thread]})
	}
	wg.cluster(snap)
	// A process waited on with a cluster of its own is waited for as the
	// cluster; one without (not sampled, or none of its threads waits)
	// as a node.
	clusters := map[int]string{} // by pid: a wait names its process so; the first of a pid
	for _, c := range wg.clusters {
		if _, ok := clusters[c.pid]; !ok {
			clusters[c.pid] = c.id
		}
	}
	for _, w := range waits {
		label := processWaitLabel[w.Kind]
		if id, ok := clusters[w.ToPid]; ok {
			wg.edges = append(wg.edges, graphEdge{from: w.from, to: id, label: label, hot: w.hot, toCluster: true})
		} else {
			wg.edge(w.from, wg.process(res, w.ToPid), label, w.hot)
		}
	}
	return wg
}

// processWaitLabel is the edge label of each kind of wait on a process.
var processWaitLabel = map[string]string{
	"child":      "waits for child",
	"pipe-read":  "reads a pipe written by",
	"pipe-write": "writes a pipe read by",
	"socket":     "waits on a socket to",
}

// hotThreads are the threads whose waits the top diagnosis is about: the
// threads of each cycle it names, or, when it names none, the threads it
// names. A thread is named by its tid in a process the diagnosis is about
// (Diagnosis.About): a paste's processes may share a pid and tids.
// Verdicts that are not a hang draw nothing hot.
func hotThreads(res *heuristics.Result) map[*stacks.Thread]bool {
	diags := res.Diagnoses
	hot := map[*stacks.Thread]bool{}
	if len(diags) == 0 || !diags[0].Deadlock {
		return hot
	}
	d := diags[0]
	tids := map[int]bool{} // a Go leak names thousands of goroutines
	for _, tid := range d.Tids {
		tids[tid] = true
	}
	named := func(r heuristics.ThreadRef) bool {
		return tids[r.Thread.Tid] && (len(d.Pids) == 0 || d.About(r.Proc))
	}
	for _, c := range res.Cycles {
		all := true
		for _, e := range c {
			all = all && named(e.From)
		}
		if all {
			for _, e := range c {
				hot[e.From.Thread] = true
			}
		}
	}
	if len(hot) > 0 {
		return hot
	}
	if res.Graph != nil {
		for _, e := range res.Graph.Edges {
			if named(e.From) {
				hot[e.From.Thread] = true
			}
		}
	}
	for _, w := range res.GoWaits {
		if named(w.Goroutine) {
			hot[w.Goroutine.Thread] = true
		}
	}
	return hot
}

func (wg *waitGraph) add(n graphNode) string {
	if _, ok := wg.index[n.id]; !ok {
		wg.index[n.id] = len(wg.nodes)
		wg.nodes = append(wg.nodes, n)
	}
	return n.id
}

func (wg *waitGraph) edge(from, to, label string, hot bool) {
	wg.edges = append(wg.edges, graphEdge{from: from, to: to, label: label, hot: hot})
}

// thread is a sampled thread's node: "tid name"; a goroutine's is
// "goroutine N" (goroutine ids repeat across processes: its node id has
// the pid). A node is its process's: two processes of one pid, or
// threads of one tid in two processes, draw apart (procIDs).
func (wg *waitGraph) thread(r heuristics.ThreadRef) string {
	if r.Thread.Goroutine() != nil {
		id := fmt.Sprintf("g%d_%d%s", r.Proc.Pid, r.Thread.Tid, wg.ids.suffix[r.Proc])
		return wg.add(graphNode{id: id, kind: nodeThread, lines: []string{"goroutine " + strconv.Itoa(r.Thread.Tid)}, proc: r.Proc})
	}
	label := strconv.Itoa(r.Thread.Tid)
	if r.Thread.Name != "" {
		label += " " + r.Thread.Name
	}
	return wg.add(graphNode{id: "t" + wg.ids.thread(r.Proc, r.Thread.Tid), kind: nodeThread, lines: []string{label}, proc: r.Proc})
}

// ghost is a thread id that names no thread of the snapshot, drawn in
// process p (nil: outside every process); its id differs from a sampled
// thread's, so a reused id draws two nodes.
func (wg *waitGraph) ghost(tid int, p *stacks.Process, why string) string {
	id := "x" + strconv.Itoa(tid)
	if p != nil {
		id += wg.ids.suffix[p]
	}
	return wg.add(graphNode{id: id, kind: nodeGhost, lines: []string{"thread " + strconv.Itoa(tid), why}, proc: p})
}

// lockProc is the process a lock is of: its waiters' (heuristics keys
// locks by process, so all are of one).
func lockProc(l *heuristics.Lock) *stacks.Process {
	if len(l.Waiters) > 0 {
		return l.Waiters[0].Proc
	}
	return nil
}

// mutex is a lock's node, one per address space: "server_lock" over its
// address, or the address alone.
func (wg *waitGraph) mutex(l *heuristics.Lock) string {
	addr := fmt.Sprintf("%#x", l.Key.Addr)
	lines := []string{addr}
	if l.Mutex != nil && l.Mutex.Symbol != "" {
		lines = []string{l.Mutex.Symbol, addr}
	}
	if l.Owner.Kind == heuristics.OwnerUnknown && l.Owner.Tid == 0 {
		lines = append(lines, "owner not recorded")
	}
	p := lockProc(l)
	id := fmt.Sprintf("m%d_%x%s", l.Key.Pid, l.Key.Addr, wg.ids.suffix[p])
	return wg.add(graphNode{id: id, kind: nodeMutex, lines: lines, proc: p})
}

// goObject is the node of what goroutines wait on, one per process and
// address: "sync.Mutex" (or the WaitGroup, the channel) over its address.
func (wg *waitGraph) goObject(w heuristics.GoWait) string {
	what := map[string]string{
		stacks.GoWaitMutex: "sync.Mutex", stacks.GoWaitRLock: "sync.RWMutex", stacks.GoWaitWLock: "sync.RWMutex",
		stacks.GoWaitWaitGroup: "sync.WaitGroup", stacks.GoWaitSend: "channel", stacks.GoWaitRecv: "channel",
		stacks.GoWaitCond: "sync.Cond",
	}[w.Kind]
	lines := []string{fmt.Sprintf("%#x", w.Object)}
	if what != "" {
		lines = []string{what, lines[0]}
	}
	id := fmt.Sprintf("o%d_%x%s", w.Goroutine.Proc.Pid, w.Object, wg.ids.suffix[w.Goroutine.Proc])
	return wg.add(graphNode{id: id, kind: nodeMutex, lines: lines, proc: w.Goroutine.Proc})
}

// owner is the node a lock is held by and the edge's label; "" when no
// owner is recorded.
func (wg *waitGraph) owner(l *heuristics.Lock) (string, string) {
	o := l.Owner
	switch o.Kind {
	case heuristics.OwnerLive:
		return wg.thread(o.Thread), "held by"
	case heuristics.OwnerForkParent:
		if o.Thread.Thread != nil {
			return wg.thread(o.Thread), "held at fork by"
		}
		return wg.ghost(o.Tid, nil, "the parent's, at fork"), "held at fork by"
	case heuristics.OwnerGone:
		return wg.ghost(o.Tid, lockProc(l), "exited"), "held by"
	case heuristics.OwnerReused:
		return wg.ghost(o.Tid, lockProc(l), "exited (id reused)"), "held by"
	}
	if o.Tid != 0 {
		return wg.ghost(o.Tid, nil, "not in the snapshot"), "held by"
	}
	return "", ""
}

// process is a child process's node: "process 4121 worker".
func (wg *waitGraph) process(res *heuristics.Result, pid int) string {
	label := "process " + strconv.Itoa(pid)
	if p := res.Process(pid); p != nil && p.Exe != "" {
		label += " " + filepath.Base(p.Exe)
	}
	return wg.add(graphNode{id: "p" + strconv.Itoa(pid), kind: nodeProcess, lines: []string{label}})
}

// cluster groups the nodes by process, in snapshot order.
func (wg *waitGraph) cluster(snap *stacks.Snapshot) {
	for _, p := range snap.Processes {
		c := graphCluster{id: "proc" + strconv.Itoa(p.Pid) + wg.ids.suffix[p], pid: p.Pid, label: processLabel(p)}
		for i, n := range wg.nodes {
			if n.proc == p {
				c.nodes = append(c.nodes, i)
			}
		}
		if len(c.nodes) > 0 {
			wg.clusters = append(wg.clusters, c)
		}
	}
}

// processLabel: "process 4121 python3 (forked from 4120)"; the name and
// the label are cut first, so the pids stay.
func processLabel(p *stacks.Process) string {
	s := "process " + strconv.Itoa(p.Pid)
	if p.Exe != "" {
		s += " " + cutRunes(Sanitize(filepath.Base(p.Exe)), 24)
	}
	if p.Label != "" {
		s += " [" + cutRunes(Sanitize(p.Label), 16) + "]"
	}
	if p.Fork != nil {
		s += fmt.Sprintf(" (forked from %d)", p.Fork.ParentPid)
	}
	return s
}

// loose are the nodes drawn outside every cluster.
func (wg *waitGraph) loose() []int {
	in := map[int]bool{}
	for _, c := range wg.clusters {
		for _, i := range c.nodes {
			in[i] = true
		}
	}
	var out []int
	for i := range wg.nodes {
		if !in[i] {
			out = append(out, i)
		}
	}
	return out
}

// graphLine is a label line for a graph: sanitised and cut to maxLabel
// runes.
func graphLine(s string) string { return cutRunes(Sanitize(s), maxLabel) }

// cutRunes cuts s to n runes, the last one "…".
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		return string([]rune(s)[:n-1]) + "…"
	}
	return s
}

// --- DOT -----------------------------------------------------------------

// Dot writes the wait-for graph for Graphviz (`dot -Tsvg`): threads are
// boxes labelled "tid name", mutexes ellipses labelled with their symbol
// and address, each process a cluster; the edges of the top diagnosis's
// cycle are red.
func Dot(w io.Writer, res *heuristics.Result) error {
	diags := res.Diagnoses
	wg := buildWaitGraph(res)
	ew := &errWriter{w: w}
	ew.printf("digraph waitfor {\n")
	ew.printf("  rankdir=LR;\n  compound=true;\n")
	ew.printf("  node [fontname=\"Helvetica\", fontsize=11];\n")
	ew.printf("  edge [fontname=\"Helvetica\", fontsize=9];\n")
	if len(diags) > 0 {
		ew.printf("  label=%s;\n  labelloc=t;\n", dotString(diags[0].ID+": "+diags[0].Title))
	}
	if len(wg.nodes) == 0 {
		ew.printf("  empty [shape=plaintext, label=%s];\n", dotString(emptyGraph))
	}
	for _, c := range wg.clusters {
		ew.printf("  subgraph cluster_%s {\n", c.id)
		ew.printf("    label=%s;\n    style=rounded;\n    color=gray60;\n", dotString(graphLine(c.label)))
		for _, i := range c.nodes {
			ew.printf("    %s;\n", dotNode(wg.nodes[i]))
		}
		ew.printf("  }\n")
	}
	for _, i := range wg.loose() {
		ew.printf("  %s;\n", dotNode(wg.nodes[i]))
	}
	first := map[string]string{} // a cluster's first node, where an edge to it ends
	for _, c := range wg.clusters {
		first[c.id] = wg.nodes[c.nodes[0]].id
	}
	for _, e := range wg.edges {
		to, attrs := e.to, "label="+dotString(e.label)
		if e.toCluster {
			to = first[e.to]
			attrs += ", lhead=cluster_" + e.to
		}
		if e.hot {
			attrs += ", color=red, fontcolor=red, penwidth=2"
		}
		ew.printf("  %s -> %s [%s];\n", e.from, to, attrs)
	}
	ew.printf("}\n")
	return ew.err
}

func dotNode(n graphNode) string {
	lines := make([]string, len(n.lines))
	for i, l := range n.lines {
		lines[i] = dotEscape(graphLine(l))
	}
	label := `"` + strings.Join(lines, `\n`) + `"`
	switch n.kind {
	case nodeMutex:
		return fmt.Sprintf("%s [shape=ellipse, label=%s]", n.id, label)
	case nodeGhost:
		return fmt.Sprintf("%s [shape=box, style=dashed, label=%s]", n.id, label)
	case nodeProcess:
		return fmt.Sprintf("%s [shape=box3d, label=%s]", n.id, label)
	}
	return fmt.Sprintf("%s [shape=box, label=%s]", n.id, label)
}

// dotString is a DOT double-quoted string holding s, sanitised.
func dotString(s string) string { return `"` + dotEscape(Sanitize(s)) + `"` }

// dotEscape escapes a sanitised string for the inside of a DOT quoted
// string: a backslash is doubled (so "\N", "\G" and "\l" stay text, not
// Graphviz's label escapes, and a trailing one cannot eat the closing
// quote) and a quote is escaped. Sanitize has already turned newlines and
// every other control character into visible text.
func dotEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// --- Mermaid -------------------------------------------------------------

// Mermaid writes the wait-for graph as a Mermaid flowchart, the text of a
// ```mermaid block: threads as boxes, mutexes as rounded nodes, one
// subgraph per process, the edges of the top diagnosis's cycle in red.
// It runs top to bottom, inside each subgraph too (Mermaid would turn a
// subgraph across its parent's direction), so it fits the narrow column
// of a tracker.
func Mermaid(w io.Writer, res *heuristics.Result) error {
	ew := &errWriter{w: w}
	writeMermaid(ew, buildWaitGraph(res))
	return ew.err
}

func writeMermaid(ew *errWriter, wg *waitGraph) {
	ew.printf("flowchart TB\n")
	if len(wg.nodes) == 0 {
		ew.printf("  empty[\"%s\"]\n", mermaidEscape(emptyGraph))
		return
	}
	for _, c := range wg.clusters {
		ew.printf("  subgraph %s [\"%s\"]\n    direction TB\n", c.id, mermaidEscape(graphLine(c.label)))
		for _, i := range c.nodes {
			ew.printf("    %s\n", mermaidNode(wg.nodes[i]))
		}
		ew.printf("  end\n")
	}
	for _, i := range wg.loose() {
		ew.printf("  %s\n", mermaidNode(wg.nodes[i]))
	}
	var hot []string
	for i, e := range wg.edges {
		ew.printf("  %s -->|\"%s\"| %s\n", e.from, mermaidEscape(e.label), e.to)
		if e.hot {
			hot = append(hot, strconv.Itoa(i))
		}
	}
	if len(hot) > 0 {
		ew.printf("  linkStyle %s stroke:#d1242f,stroke-width:3px,color:#d1242f\n", strings.Join(hot, ","))
	}
	var mutexes, ghosts []string
	for _, n := range wg.nodes {
		switch n.kind {
		case nodeMutex:
			mutexes = append(mutexes, n.id)
		case nodeGhost:
			ghosts = append(ghosts, n.id)
		}
	}
	if len(mutexes) > 0 {
		ew.printf("  classDef mutex fill:#fff8c5,stroke:#9a6700\n  class %s mutex\n", strings.Join(mutexes, ","))
	}
	if len(ghosts) > 0 {
		ew.printf("  classDef ghost stroke-dasharray:4 3\n  class %s ghost\n", strings.Join(ghosts, ","))
	}
}

func mermaidNode(n graphNode) string {
	lines := make([]string, len(n.lines))
	for i, l := range n.lines {
		lines[i] = mermaidEscape(graphLine(l))
	}
	label := strings.Join(lines, "<br>")
	if n.kind == nodeMutex {
		return fmt.Sprintf("%s([\"%s\"])", n.id, label)
	}
	return fmt.Sprintf("%s[\"%s\"]", n.id, label)
}

// mermaidEscape makes a sanitised string safe inside a quoted Mermaid
// label: every character that means something to Mermaid's grammar
// (quotes, brackets, "|", "-->", ";", "%%" comments), to the HTML it
// renders labels into ("<", ">", "&") or to Markdown strings ("`", "*")
// becomes a Mermaid entity code, "#60;", which Mermaid draws as the
// character itself ("_" means something only inside a Markdown string,
// which these labels are not). Letters, digits, spaces and harmless punctuation
// stay as they are, so the source stays readable.
func mermaidEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == ' ' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case strings.ContainsRune(".,:/+=@!?'$^~-_", r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, "#%d;", r)
		default:
			b.WriteRune(r) // Sanitize left no control or bidi character
		}
	}
	return b.String()
}
