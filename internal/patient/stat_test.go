package patient

import (
	"os"
	"syscall"
	"testing"
)

// A command name may hold spaces and parentheses: the fields are read
// after the last ')'.
func TestParseStat(t *testing.T) {
	st, err := parseStat([]byte("4711 (a) b (c)) T 4700 4711 4690 34816 4711 2097216 97 0 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stat{State: "T", Ppid: 4700, Pgrp: 4711, Session: 4690, Flags: 2097216}); st != want {
		t.Errorf("%+v, want %+v", st, want)
	}
	if st.Flags&PFKthread == 0 {
		t.Errorf("flags %#x: PF_KTHREAD not set", st.Flags)
	}
	if _, err := parseStat([]byte("4711 (cut")); err == nil {
		t.Errorf("a line without its fields parsed")
	}
	me, err := ReadStat(os.Getpid())
	if err != nil || me.State == "" || me.Ppid != os.Getppid() || me.Pgrp != syscall.Getpgrp() {
		t.Errorf("this process: %+v, %v; want ppid %d, pgrp %d", me, err, os.Getppid(), syscall.Getpgrp())
	}
}
