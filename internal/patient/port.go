package patient

import (
	"net"
	"testing"
)

// FreePort returns a TCP port free on 127.0.0.1 now, for a server a test
// starts (debuginfod, slurmctld): a fixed port may be taken on a shared
// machine.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
