package stacks

import "testing"

// TestFuncKeyPlainIdent: FuncKey's shortcut for plain identifiers gives
// what the full reduction gives.
func TestFuncKeyPlainIdent(t *testing.T) {
	for _, name := range []string{"__GI___clock_nanosleep", "___pthread_cond_wait", "start_thread", "clone3",
		"__GI_", "_", "___", "operator", "operatorfoo", "main", "h0123456789abcdef", "__futex_abstimed_wait_common64", "x"} {
		if !plainIdent(name) {
			t.Fatalf("%q: not a plain identifier", name)
		}
		if got, want := FuncKey(name), funcKey(name); got != want {
			t.Errorf("FuncKey(%q) = %q, the full reduction says %q", name, got, want)
		}
	}
	for _, name := range []string{"", "pthread_mutex_lock@@GLIBC_2.2.5", "foo.part.0", "ns::f", "f(int)"} {
		if plainIdent(name) {
			t.Errorf("%q read as a plain identifier", name)
		}
	}
}
