package heuristics

// A collective straggler seen from the ranks a paste holds: MPICH's
// progress-timeout report (MPIR_CVAR_DEBUG_PROGRESS_TIMEOUT) is printed
// by a rank that has waited in MPI past the timeout, with the requests
// it has pending. A paste often holds one or two ranks' reports, not the
// job: too few for the majority rule (collective_straggler.go), yet the
// report says enough. A rank that waits in a collective past the timeout
// waits for a rank that has not joined it; a rank that waits in a
// point-to-point receive while messages from other ranks arrive
// unexpected (they went on, into the next collective) is itself the
// straggler, held by the send it waits for. Both low confidence.

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
	"github.com/hangdoc/hangdoc/stacks"
)

var (
	// mpiPointToPointRE: MPI calls that wait for one peer, not for the
	// communicator.
	mpiPointToPointRE = lazyre.New(`(?i)^p?mpi_(?:recv|mrecv|send|ssend|bsend|rsend|sendrecv|sendrecv_replace|wait|waitall|waitany|waitsome|probe|mprobe|test)$`)
	// mpichSourceRE reads a pending request's peer ("source=1").
	mpichSourceRE = lazyre.New(`\bsource=(-?\d+)`)
)

// timeoutRank is a rank that printed a progress-timeout report.
type timeoutRank struct {
	r          rankView
	reqs       []string // the pending requests, as listed
	unexpected []string // the sources of unexpected messages ("2")
	waitsOn    []string // the sources of its posted receives
}

func progressTimeoutRanks(a *analysis) []timeoutRank {
	var out []timeoutRank
	for _, p := range a.Snap.Processes {
		if !strings.HasPrefix(p.Message, "MPICH progress timeout") {
			continue
		}
		tr := timeoutRank{r: rankOf(p)}
		for _, n := range p.Notes {
			req, ok := strings.CutPrefix(n, stacks.MPICHRequestNote)
			if !ok {
				continue
			}
			tr.reqs = append(tr.reqs, req)
			if m := mpichSourceRE.FindStringSubmatch(req); m != nil {
				if strings.Contains(req, "unexp") {
					tr.unexpected = append(tr.unexpected, m[1])
				} else {
					tr.waitsOn = append(tr.waitsOn, m[1])
				}
			}
		}
		out = append(out, tr)
	}
	return out
}

// matchProgressTimeout gives collective-straggler from the progress-
// timeout reports of a paste, when the ranks are too few for the
// majority rule: the first rank whose report says what holds it.
func matchProgressTimeout(a *analysis) []Diagnosis {
	ranks := progressTimeoutRanks(a)
	for _, tr := range ranks {
		if tr.r.coll == "" || tr.r.lead == nil {
			continue
		}
		coll := tr.r.coll
		p2p := mpiPointToPointRE.MatchString(stacks.FuncKey(coll))
		switch {
		case !p2p:
			return []Diagnosis{timeoutInCollective(tr, ranks)}
		case len(tr.unexpected) > 0:
			return []Diagnosis{timeoutStraggler(tr)}
		}
	}
	return nil
}

func timeoutRefs() []string {
	return append([]string{"https://github.com/pmodels/mpich/pull/7084", "https://github.com/pmodels/mpich/pull/7120"}, collectiveRefs...)
}

// timeoutInCollective: the rank waits in a collective past the timeout:
// a rank that has not joined holds it up.
func timeoutInCollective(tr timeoutRank, all []timeoutRank) Diagnosis {
	r := tr.r
	d := Diagnosis{ID: "collective-straggler", Deadlock: true, Confidence: Low, Refs: timeoutRefs()}
	d.name(ThreadRef{Proc: r.p, Thread: r.lead})
	d.Summary = fmt.Sprintf("%s has waited in `%s` past MPICH's progress timeout: a rank that has not joined the collective holds it up",
		rankName(r), r.coll)
	d.Chain = append(d.Chain, fmt.Sprintf("%s waits in `%s` with %s", rankName(r), r.coll, tr.p().Message[len("MPICH progress timeout: "):]))
	var others []string
	for _, o := range all {
		if o.r.p != r.p {
			others = append(others, fmt.Sprintf("%s in %s", rankName(o.r), o.r.where()))
		}
	}
	if len(others) > 0 {
		d.Chain = append(d.Chain, "the other ranks of the paste: "+strings.Join(others, "; "))
	}
	d.Chain = append(d.Chain, "a collective completes only when every rank joins it: the straggler is a rank not in it, which the paste does not show in it")
	d.Evidence = append(d.Evidence, fmt.Sprintf("%s, %s", rankName(r), stackLineN(r.lead, 12)),
		"MPICH prints a progress-timeout report only for a rank that waited in MPI longer than MPIR_CVAR_DEBUG_PROGRESS_TIMEOUT",
		"the paste holds too few ranks to tell the straggler by majority: the reports of every rank name it")
	d.Hints = append(d.Hints, attachHint(0, "on each rank to name the straggler"))
	for _, q := range tr.reqs {
		d.Evidence = append(d.Evidence, "pending request "+q)
	}
	d.Fix = fmt.Sprintf("Find the rank that does not reach `%s`: look at every rank's report for one that waits elsewhere "+
		"(a receive nobody sends, a different collective, an exit), and at the branches that make one rank skip or reorder the collective.", r.coll)
	return d
}

// timeoutStraggler: the rank waits in a point-to-point call while other
// ranks' messages arrive unexpected: they went on; it is the straggler.
func timeoutStraggler(tr timeoutRank) Diagnosis {
	r := tr.r
	d := Diagnosis{ID: "collective-straggler", Deadlock: true, Confidence: Low, Refs: timeoutRefs()}
	d.name(ThreadRef{Proc: r.p, Thread: r.lead})
	from := "a peer"
	if len(tr.waitsOn) > 0 {
		from = "rank " + strings.Join(tr.waitsOn, ", rank ")
	}
	d.Summary = fmt.Sprintf("%s is the straggler: it has waited in `%s` for %s past MPICH's progress timeout, while messages "+
		"from rank %s arrived unexpected: the other ranks went on without it", rankName(r), r.coll, from, strings.Join(tr.unexpected, ", rank "))
	d.Chain = append(d.Chain,
		fmt.Sprintf("%s waits in `%s` for %s, which has not sent", rankName(r), r.coll, from),
		fmt.Sprintf("rank %s already sent it what it sends next (an unexpected message: no receive posted for it): it is ahead, most likely in a collective that waits for this rank", strings.Join(tr.unexpected, ", rank ")),
		"the receive holds this rank back, and the ranks ahead wait for it: the send it waits for is never made (a branch that skips it, a different order)")
	d.Evidence = append(d.Evidence, fmt.Sprintf("%s, %s", rankName(r), stackLineN(r.lead, 12)))
	for _, q := range tr.reqs {
		d.Evidence = append(d.Evidence, "pending request "+q)
	}
	d.Evidence = append(d.Evidence, "MPICH prints a progress-timeout report only for a rank that waited in MPI longer than MPIR_CVAR_DEBUG_PROGRESS_TIMEOUT")
	d.Fix = fmt.Sprintf("Make %s send what %s waits for in `%s` (source and tag as the pending request lists), or post the receive "+
		"only where the send is sure to come; check the branches that differ between ranks before it.", from, rankName(r), r.coll)
	return d
}

func (tr timeoutRank) p() *stacks.Process { return tr.r.p }

// rankName: "rank 2" for a rank labelled so, else "the rank" (a report
// without mpirun -l's labels) or its pid.
func rankName(r rankView) string {
	switch {
	case strings.HasPrefix(r.p.Label, "rank "):
		return r.p.Label
	case r.p.Label == "" && r.p.Pid == 0:
		return "the rank"
	}
	return "rank " + r.name()
}
