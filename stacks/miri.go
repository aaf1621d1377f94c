package stacks

import (
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// Miri's deadlock report (rust-lang/miri, src/diagnostics.rs). When every
// thread of the interpreted program is blocked, `cargo miri run` stops
// with
//
//	error: the evaluated program deadlocked
//	  --> …/library/std/src/sys/pal/unix/futex.rs:80:21
//	   |
//	80 |                     )
//	   |                     ^ this thread got stuck here
//	   |
//	   = note: BACKTRACE:
//	   = note: inside `std::sys::pal::unix::futex::futex_wait` at …/futex.rs:80:21: 80:22
//	   = note: inside `std::sys::sync::mutex::futex::Mutex::lock_contended` at …
//	note: inside `main`
//
// one such block a blocked thread ("BACKTRACE on thread `worker`:" names
// a thread other than main; before miri#3472, 2024, only the current
// thread's, without the BACKTRACE line). Each backtrace becomes a thread, innermost
// frame first, marked by the report: Miri checked that the program can
// never go on, so it is a deadlock whatever the frames say.

func init() {
	registerFormat(&Format{Name: "miri", Sniff: sniffMiri, Parse: ParseMiri, Begins: beginsMiri})
}

var (
	miriErrorRE = lazyre.New(`(?m)^[\s>]*error: (?:deadlock: )?the evaluated program deadlocked`)
	// "= note: inside `f` at src/main.rs:4:5: 4:20", "note: inside `main`",
	// "= note: inside closure at …", "= note: inside `<T as Drop>::drop` at …"
	miriFrameRE = lazyre.New("^(?:= )?note: inside (?:`([^`]*)`?|(closure))(?: at (\\S+?):(\\d+):\\d+(?:: \\d+:\\d+)?)?$")
	// "= note: BACKTRACE:", "= note: BACKTRACE on thread `worker`:"
	miriTraceRE = lazyre.New("^(?:= )?note: BACKTRACE(?: on thread `([^`]*)`)?:$")
)

func sniffMiri(head []byte) int { return 100 * len(miriErrorRE.FindAllIndex(sniffText(head), 10)) }

// beginsMiri runs on every line of every dump being split: the literal
// the regexp needs is looked for first (a frame line of a goroutine dump
// costs a Contains, not a backtracking match).
func beginsMiri(t, next string) bool {
	return strings.Contains(t, "the evaluated program deadlocked") && miriErrorRE.MatchString(t)
}

// ParseMiri reads Miri's deadlock reports (see above) into one process.
func ParseMiri(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &miriParser{}
	readErr := scanTextLines(r, p.line)
	var snap *Snapshot
	if len(p.procs) > 0 {
		for _, pr := range p.procs {
			pr.Notes = append(pr.Notes, "read as Miri's deadlock report: Miri found that no thread of the program can go on")
		}
		snap = &Snapshot{Schema: Schema, Source: "miri", Samples: 1, Processes: p.procs}
	}
	snap, err := readResult(snap, readErr, func() error {
		return nothingRead(p.track.firstText, p.track.skipped.list, "no Miri report in the input",
			"no Miri deadlock report (\"error: the evaluated program deadlocked\" with its \"= note: inside `…`\" backtrace) found")
	})
	return snap, p.track.skipped.list, err
}

type miriParser struct {
	procs  []*Process
	track  lineTrack
	named  bool    // cur's name is settled (its BACKTRACE line or first frame read)
	inErr  bool    // inside an "error: … deadlocked" block
	cur    *Thread // the backtrace being read
	lastNo int     // the line of the last frame read
}

func (p *miriParser) line(l textLine) {
	if !p.track.next(l) {
		return
	}
	t := l.text
	switch {
	case miriErrorRE.MatchString(t):
		// one block a blocked thread; Miri before 2024 (miri#3472)
		// printed the current thread's frames only, with no BACKTRACE line
		p.inErr, p.named = true, false
		p.cur = &Thread{Name: "main", State: "S", Stack: []Frame{}, Notes: []string{"Miri: the evaluated program deadlocked: this thread got stuck"}}
		return
	case !p.inErr:
		p.track.skip(l.no, "before Miri's report")
		return
	}
	if m := miriTraceRE.FindStringSubmatch(t); m != nil {
		if m[1] != "" && p.cur != nil && !p.named {
			p.cur.Name = m[1]
		}
		p.place()
		return
	}
	if m := miriFrameRE.FindStringSubmatch(t); m != nil && p.cur != nil {
		p.place()
		f := Frame{Func: m[1], File: m[3]}
		if m[2] != "" {
			f.Func = "{closure}"
		}
		f.Line, _ = strconv.Atoi(m[4])
		if !strings.HasSuffix(strings.TrimSpace(strings.SplitN(t, " at ", 2)[0]), "`") && m[2] == "" {
			// the paste ends inside the name: "inside `std::sys::sync::mutex::futex::Mutex::"
			p.cur.Notes = append(p.cur.Notes, cutFrame(l.no, len(p.cur.Stack)))
		}
		p.cur.Stack = append(p.cur.Stack, f)
		p.lastNo = l.no
		return
	}
	// the source excerpt ("--> file:line:col", "80 | …", "| ^ …") and
	// other notes say nothing a frame does not
	if !strings.HasPrefix(t, "-->") && !strings.HasPrefix(t, "|") && !miriSourceLine(t) && !strings.HasPrefix(t, "= ") && !strings.HasPrefix(t, "note:") {
		p.track.skip(l.no, "not a line of Miri's report")
	}
}

// place puts the thread being read in a process once its name is known:
// the current one, unless that already has a thread of that name (the
// report pasted twice, or two runs: Miri names each thread once a run).
func (p *miriParser) place() {
	if p.named || p.cur == nil {
		return
	}
	p.named = true
	if n := len(p.procs); n == 0 || slices.ContainsFunc(p.procs[n-1].Threads, func(t *Thread) bool { return t.Name == p.cur.Name }) {
		p.procs = append(p.procs, &Process{Threads: []*Thread{}})
	}
	pr := p.procs[len(p.procs)-1]
	pr.Threads = append(pr.Threads, p.cur)
}

// miriSourceLine: a line of the quoted source, "80 |   )".
func miriSourceLine(t string) bool {
	i := strings.IndexByte(t, '|')
	if i <= 0 {
		return false
	}
	_, err := strconv.Atoi(strings.TrimSpace(t[:i]))
	return err == nil
}
