package attach

import (
	"slices"
	"strings"
	"testing"
)

// procLocks is /proc/locks as this machine printed it while two
// processes (4016, 4027) each held one flock and waited for the other's
// (a real run of testdata/patients/flock_abba.c's shape, copied from
// `cat /proc/locks`); the last two lines, an OFD lock (pid -1) and a
// POSIX lock on another file, are added by hand.
const procLocks = `1: FLOCK  ADVISORY  WRITE 4016 fe:00:9978036 0 EOF
1: -> FLOCK  ADVISORY  WRITE 4027 fe:00:9978036 0 EOF
2: FLOCK  ADVISORY  WRITE 4027 fe:00:9978037 0 EOF
2: -> FLOCK  ADVISORY  WRITE 4016 fe:00:9978037 0 EOF
3: OFDLCK ADVISORY  WRITE -1 fe:00:9978040 0 EOF
4: POSIX  ADVISORY  READ 5000 fe:00:9978041 0 EOF
`

func TestLockHolders(t *testing.T) {
	cases := []struct {
		pid  int
		file string
		want []int
	}{
		{4027, "fe:00:9978036", []int{4016}}, // its own request follows its blocker
		{4016, "fe:00:9978037", []int{4027}}, // and the other way round
		{4016, "fe:00:9978036", nil},         // it holds that one itself: nobody else
		{6000, "fe:00:9978041", []int{5000}}, // no request listed: every holder
		{6000, "fe:00:9978040", nil},         // an OFD lock names no process
		{6000, "fe:00:9999999", nil},         // no lock on the file
		{4027, "00:fe:9978036", nil},         // device numbers must match too
	}
	for _, c := range cases {
		if got := lockHolders(strings.NewReader(procLocks), c.pid, c.file); !slices.Equal(got, c.want) {
			t.Errorf("pid %d on %s: holders %v, want %v", c.pid, c.file, got, c.want)
		}
	}
	for _, bad := range []string{"", "garbage", "1: FLOCK ADVISORY WRITE notapid fe:00:1 0 EOF", "1: -> FLOCK"} {
		if _, ok := parseFileLock(bad); ok {
			t.Errorf("parseFileLock(%q) accepted a broken line", bad)
		}
	}
}

func TestFileLockWait(t *testing.T) {
	for _, c := range []struct {
		call string
		cmd  uint64
		want bool
	}{{"flock", 0, true}, {"fcntl", 7, true}, {"fcntl", 38, true}, {"fcntl", 14, true}, {"fcntl", 6, false}, {"fcntl", 1, false}, {"read", 7, false}} {
		if got := fileLockWait(c.call, c.cmd); got != c.want {
			t.Errorf("fileLockWait(%s, %d) = %v", c.call, c.cmd, got)
		}
	}
}
