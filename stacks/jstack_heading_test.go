package stacks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parseCorpusJstack(t *testing.T, name string) *Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "corpus", name, "dump.txt"))
	if err != nil {
		t.Fatal(err)
	}
	snap, _, err := ParseJstack(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func jstackThread(snap *Snapshot, name string) *Thread {
	for _, p := range snap.Processes {
		for _, th := range p.Threads {
			if th.Name == name {
				return th
			}
		}
	}
	return nil
}

// The JVM's deadlock section pasted as one block and the threads'
// stacks as the next, without the "Java stack information for the
// threads listed above" heading between them (glassfish#19056 in the
// corpus, a real paste): the stacks are the listed threads', not
// lines of the summary. They read as 0 frames before.
func TestJstackStacksWithoutHeading(t *testing.T) {
	snap := parseCorpusJstack(t, "jstack-glassfish-19056-assoc-with-thread-pool-list-monitors")
	th := jstackThread(snap, "TP-Processor68")
	if th == nil || len(th.Stack) < 3 || !strings.HasSuffix(th.Stack[0].Func, "AssocWithThreadResourcePool.deleteResource") {
		t.Fatalf("TP-Processor68 %+v, want its stack from deleteResource", th)
	}
}

// Silent case: with the heading (jajuk#847, a real paste) the stacks are
// read as before.
func TestJstackStacksWithHeading(t *testing.T) {
	snap := parseCorpusJstack(t, "jstack-jajuk-847-three-thread-monitor-cycle")
	th := jstackThread(snap, "Thread-88")
	if th == nil || len(th.Stack) != 3 || !strings.HasSuffix(th.Stack[0].Func, "ObserverRegistry.notifySync") {
		t.Fatalf("Thread-88 %+v, want its 3 frames from ObserverRegistry.notifySync", th)
	}
}
