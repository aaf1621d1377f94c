package attach

import "testing"

func TestHexAddr(t *testing.T) {
	cases := map[string]string{
		"0100007F:1388":                         "127.0.0.1:5000",
		"00000000000000000000000001000000:0050": "[::1]:80",
		"garbage":                               "garbage",
	}
	for in, want := range cases {
		if got := hexAddr(in); got != want {
			t.Errorf("hexAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLockFrameNames(t *testing.T) {
	for _, fn := range []string{"pthread_mutex_lock", "___pthread_mutex_lock", "__pthread_mutex_lock_full", "__lll_lock_wait", "std::mutex::lock()", "pthread_mutex_timedlock"} {
		if !isMutexLock(fn) {
			t.Errorf("isMutexLock(%q) = false", fn)
		}
	}
	for _, fn := range []string{"__lll_lock_wait_private", "pthread_cond_wait", "malloc", ""} {
		if isMutexLock(fn) {
			t.Errorf("isMutexLock(%q) = true", fn)
		}
	}
	if !isJoin("__pthread_clockjoin_ex") || !isJoin("std::thread::join()") || isJoin("pthread_create") {
		t.Error("isJoin")
	}
}
