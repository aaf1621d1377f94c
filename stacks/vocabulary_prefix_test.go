package stacks

import "testing"

// A name cut by the paste takes a lock only when every name and glob it
// can be completed to takes one.
func TestPrefixTakesLock(t *testing.T) {
	v := BuiltinVocabulary()
	for _, c := range []struct {
		cut  string
		want bool
	}{
		{"std::sys::sync::mutex::futex::Mutex::", true}, // lock_contended, lock
		{"pthread_mutex_lo", true},
		{"__GI___pthread_mutex_lo", true},
		{"std::sys::sync::condvar::futex::Condvar::", false}, // wait: a condition, no lock
		{"pthread_cond_wa", false},
		{"pthread_", false}, // a mutex lock or a condition wait
		{"render_fr", false},
		{"", false},
	} {
		if got := v.PrefixTakesLock(c.cut); got != c.want {
			t.Errorf("PrefixTakesLock(%q) = %v, want %v", c.cut, got, c.want)
		}
	}
}
