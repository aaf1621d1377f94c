package attach

import (
	"io"
	"time"

	"github.com/hangdoc/hangdoc/attach/module"
)

// DebuginfodOptions says how debug files that are not on disk are
// fetched by build id from the servers in DEBUGINFOD_URLS, as gdb and
// elfutils fetch them. The fetches happen while modules are loaded,
// before any thread is stopped, within one time budget; a server that
// does not answer is not asked again for ten minutes.
type DebuginfodOptions struct {
	Off      bool          // --debuginfod=off
	Budget   time.Duration // for all fetches of one attach (default module.DebuginfodBudget)
	Progress io.Writer     // a terminal, for a line per fetch; nil for none
}

func (o DebuginfodOptions) client() *module.Debuginfod {
	if o.Off {
		return nil
	}
	if o.Budget <= 0 {
		o.Budget = module.DebuginfodBudget
	}
	d := module.NewDebuginfod(o.Budget)
	if d != nil {
		d.Progress = o.Progress
	}
	return d
}

// fetchedNotes says which debug files came from a server, and which
// servers failed.
func fetchedNotes(d *module.Debuginfod) []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, f := range d.Fetched() {
		out = append(out, "debug file of "+f+" (debuginfod)")
	}
	for _, f := range d.Failed() {
		out = append(out, "debuginfod server "+f+": not asked again for 10 minutes (a file there marks it; --debuginfod=off not to ask at all)")
	}
	return out
}
