package heuristics

// Lock-order reports made by a tool, not thread dumps: a deadlock
// detector that watches lock acquisitions prints the cycle it saw in the
// lock-order graph, with the stacks where the locks were taken. Abseil's
// debug Mutex ("Potential Mutex deadlock"), ThreadSanitizer and bcc's
// deadlock tool ("Mutex M1 acquired here while holding mutex M0"),
// go-deadlock ("POTENTIAL DEADLOCK: Inconsistent locking"), Helgrind
// ("lock order … violated"), a debug mutex that times out a holder ("A
// lock was held until deadlock"). The frame-list reader keeps the line
// before each stack as the thread's name; the claim is there.
//
// A tool's claim is evidence only with the program's own frames beside
// it: a report whose stacks hold nothing but the detector's and the
// backtrace library's frames (parking_lot's deadlock_detection printed
// through a logger, cut before any program frame) says that a detector
// fired, not where, and its false positives exist.

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
	"github.com/hangdoc/hangdoc/stacks"
)

// lockOrderClaim is one detector's way of saying it saw a lock-order
// cycle.
type lockOrderClaim struct {
	tool string
	re   *lazyre.RE
	// hung: the tool says the program is stuck now (a holder timed out),
	// not that the order could deadlock.
	hung bool
}

var lockOrderClaims = []lockOrderClaim{
	{tool: "Abseil's deadlock detector", re: lazyre.New(`(?i)potential mutex deadlock|cycle in the historical lock ordering graph`)},
	{tool: "a lock-order detector (ThreadSanitizer, bcc deadlock)", re: lazyre.New(`(?i)\bmutex M\d+ (?:\(0x[0-9a-f]+\) )?acquired here while holding mutex M\d+|lock-order-inversion \(potential deadlock\)|potential deadlock detected`)},
	{tool: "go-deadlock", re: lazyre.New(`(?i)potential deadlock: inconsistent locking`)},
	{tool: "Helgrind", re: lazyre.New(`(?i)lock order "0x[0-9a-f]+ before 0x[0-9a-f]+" violated`)},
	{tool: "a debug mutex", re: lazyre.New(`(?i)a lock was held until deadlock`), hung: true},
}

// toolClaim is a thread of a tool's report that claims a lock-order
// cycle.
type toolClaim struct {
	ref   ThreadRef
	claim lockOrderClaim
	text  string // the claim as printed
	frame stacks.Frame
}

// goDeadlockReportRE: the go-deadlock reader names every stack of a
// report by its "POTENTIAL DEADLOCK:" header (stacks/godeadlock.go).
var goDeadlockReportRE = lazyre.New(`^POTENTIAL DEADLOCK:`)

// toolClaimName: a thread's name is a detector's claim.
func toolClaimName(name string) bool {
	if goDeadlockReportRE.MatchString(name) {
		return true
	}
	for _, c := range lockOrderClaims {
		if c.re.MatchString(name) {
			return true
		}
	}
	return false
}

// findToolClaims returns the threads whose header is a detector's
// lock-order claim and whose stack shows a frame of the program.
func findToolClaims(a *analysis) []toolClaim {
	var out []toolClaim
	for _, p := range a.Snap.Processes {
		for _, t := range p.Threads {
			for _, c := range lockOrderClaims {
				text := c.re.FindString(t.Name)
				if text == "" {
					continue
				}
				if f, ok := programFrame(t.Stack); ok {
					out = append(out, toolClaim{ref: ThreadRef{p, t}, claim: c, text: t.Name, frame: f})
				}
				break
			}
		}
	}
	return out
}

// programFrame returns the innermost frame of a report's stack that is
// the program's code: not a lock's or wait's frame, not the detector's
// or the backtrace library's own.
func programFrame(st []stacks.Frame) (stacks.Frame, bool) {
	for _, f := range st {
		if f.Func == "" && f.File == "" || nativeRow(f) != nil {
			continue
		}
		k := funcKey(f)
		if strings.HasPrefix(k, "backtrace::") || strings.HasPrefix(k, "std::backtrace") ||
			strings.HasPrefix(k, "parking_lot::deadlock") || strings.Contains(k, "DeadlockCheck") {
			continue
		}
		return f, true
	}
	return stacks.Frame{}, false
}

// toolClaimDiagnoses says the lock-order cycles the tools' reports claim,
// one per process (by process, not pid: two reports pasted without
// pids are both pid 0, and each is its own claim).
func toolClaimDiagnoses(a *analysis) []Diagnosis {
	byProc := map[*stacks.Process][]toolClaim{}
	var order []*stacks.Process
	for _, c := range findToolClaims(a) {
		p := c.ref.Proc
		if byProc[p] == nil {
			order = append(order, p)
		}
		byProc[p] = append(byProc[p], c)
	}
	var ds []Diagnosis
	for _, p := range order {
		cs := byProc[p]
		first := cs[0]
		d := Diagnosis{
			Deadlock:   true,
			Confidence: Low,
			Refs:       lockOrderRefs,
			Summary: fmt.Sprintf("%s reports a lock-order cycle: %s", first.claim.tool,
				strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(first.text), ":"))),
		}
		var refs []ThreadRef
		for _, c := range cs {
			refs = append(refs, c.ref)
			site := frameName(c.frame)
			if site == "" || c.frame.Func == "" {
				site = c.frame.Name()
			}
			d.Chain = append(d.Chain, fmt.Sprintf("%s: %q, at `%s`", c.claim.tool, strings.TrimSpace(c.text), site))
			d.Evidence = append(d.Evidence, stackLine(c.ref.Thread))
		}
		if first.claim.hung {
			d.Chain = append(d.Chain, "the tool timed the lock out: its holder never released it, most likely because it waits for a lock the waiter holds (a lock-order cycle)")
		} else {
			d.Chain = append(d.Chain, "the tool saw these locks taken in opposite orders by different code paths: two threads running them at once each hold one and wait for the other")
		}
		d.Evidence = append(d.Evidence, "a detector's report, not a thread dump: it says where the locks were taken, not that every thread is stuck; a dump of all threads (gdb `thread apply all bt`) while it hangs would show the cycle itself")
		d.name(refs...)
		ds = append(ds, d)
	}
	return ds
}
