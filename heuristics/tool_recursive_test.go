package heuristics

import (
	"os"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// parseGoDeadlock reads a go-deadlock report through its reader.
func parseGoDeadlock(t *testing.T, text string) *stacks.Snapshot {
	t.Helper()
	snap, _, err := stacks.ParseGoDeadlock(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestGoDeadlockRecursive: go-deadlock's Recursive locking is a
// self-deadlock only when the current acquire runs inside the frame that
// took the lock first. The real milvus#41349 report (the same call site
// twice: a reused goroutine id, closed as a false report) claims nothing;
// the nested report below is hand-written in the tool's format
// (deadlock.go's preLock and printStack), one lock taken again through a
// call made while it is held.
func TestGoDeadlockRecursive(t *testing.T) {
	b, err := os.ReadFile("../testdata/dumps/go-deadlock/milvus_recursive_locking.txt")
	if err != nil {
		t.Fatal(err)
	}
	milvus := parseGoDeadlock(t, string(b))
	none(t, "self-deadlock", milvus)
	for _, d := range Diagnose(milvus, Options{}).Diagnoses {
		if d.Deadlock {
			t.Errorf("a deadlock claimed on a false report: [%s] %s", d.ID, d.Summary)
		}
	}

	nested := `POTENTIAL DEADLOCK: Recursive locking:
current goroutine 7 lock 0xc000120010
/go/pkg/mod/github.com/sasha-s/go-deadlock@v0.3.1/deadlock.go:84 go-deadlock.(*Mutex).Lock { lock(m.mu.Lock, m) } <<<<<
store.go:40 store.(*Store).size { s.mu.Lock() }
store.go:30 store.(*Store).Put { if s.size() > s.max { }
server.go:12 main.handle { st.Put(k, v) }

Previous place where the lock was grabbed (same goroutine)
/go/pkg/mod/github.com/sasha-s/go-deadlock@v0.3.1/deadlock.go:84 go-deadlock.(*Mutex).Lock { lock(m.mu.Lock, m) } <<<<<
store.go:28 store.(*Store).Put { s.mu.Lock() }
server.go:12 main.handle { st.Put(k, v) }
`
	d := one(t, "self-deadlock", parseGoDeadlock(t, nested))
	if d.Confidence != Low || !d.Deadlock {
		t.Errorf("confidence %s deadlock %v: want a low-confidence deadlock (a detector's claim)", d.Confidence, d.Deadlock)
	}
	has(t, "summary", d.Summary, "goroutine 7", "`store.(*Store).size`", "`store.(*Store).Put`")

	// the same function locking again at another line, directly
	direct := strings.Replace(nested, "store.go:40 store.(*Store).size { s.mu.Lock() }\nstore.go:30 store.(*Store).Put { if s.size() > s.max { }", "store.go:31 store.(*Store).Put { s.mu.Lock() }", 1)
	one(t, "self-deadlock", parseGoDeadlock(t, direct))

	// the previous place deeper than the current one, or other callers:
	// not nested
	head, prev, _ := strings.Cut(nested, "\nPrevious place where the lock was grabbed (same goroutine)\n")
	hdr, cur, _ := strings.Cut(head, "0xc000120010\n")
	swapped := hdr + "0xc000120010\n" + prev + "\nPrevious place where the lock was grabbed (same goroutine)\n" + cur
	none(t, "self-deadlock", parseGoDeadlock(t, swapped))
	other := strings.Replace(nested, "server.go:12 main.handle { st.Put(k, v) }\n\nPrevious", "server.go:19 main.handle { st.Put(k, v) }\n\nPrevious", 1)
	none(t, "self-deadlock", parseGoDeadlock(t, other))
}
