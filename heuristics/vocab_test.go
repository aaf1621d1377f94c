package heuristics

import (
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// acmeStuck is a hand-written pasted dump: the only thread of a process
// blocked in a lock of a library hangdoc does not know (acme's
// SpinMutex), under a bare syscall.
func acmeStuck() *stacks.Snapshot {
	return pasted(proc(700, thread(700, "acme", "syscall", "acme::Gate::enter()", "acme::Registry::add(int)", "main")))
}

// TestNewLockFamilyIsOneRow: teaching hangdoc a lock family is one row
// of the vocabulary. Without it, acme's lock is a bare futex sleep; with
// it, the same dump is a lock nobody else could release.
func TestNewLockFamilyIsOneRow(t *testing.T) {
	before := Diagnose(acmeStuck(), Options{}).Diagnoses
	for _, d := range before {
		if d.ID == "self-deadlock" {
			t.Fatalf("acme's lock is known before its row was added: %s", d.Summary)
		}
	}
	v, err := stacks.BuiltinVocabulary().WithRows([]byte(`{"rows": [
		{"family": "acme::Gate", "library": "acme", "role": "acquire", "funcs": ["acme::Gate::enter"],
		 "lock_arg": ["this"], "recursive": "no", "owner": "none"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer stacks.UseVocabulary(v)()
	after := Diagnose(acmeStuck(), Options{}).Diagnoses
	if len(after) == 0 || after[0].ID != "self-deadlock" {
		t.Fatalf("with acme's row: %v, want self-deadlock first", idsOf(after))
	}
	if after[0].Confidence != Low {
		t.Errorf("confidence %s without an owner or a second acquisition on the stack, want low", after[0].Confidence)
	}
}

func idsOf(ds []Diagnosis) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.ID+"("+d.Confidence+")")
	}
	return out
}
