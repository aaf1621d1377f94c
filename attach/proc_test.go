package attach

import (
	"testing"

	"github.com/hangdoc/hangdoc/attach/module"
)

func TestParseStatNameWithParens(t *testing.T) {
	line := "4711 (a (b) c) S 1 4711 4711 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 5 0 12345 1000 100 18446744073709551615"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "a (b) c" || st.State != 'S' || st.PPid != 1 || st.Ticks != 10 || st.StartT != 12345 {
		t.Fatalf("got %+v", st)
	}
}

func TestParseStatGarbage(t *testing.T) {
	for _, in := range []string{"", "4711 noparens S", "1 (x) S 1 2"} {
		if _, err := parseStat([]byte(in)); err == nil {
			t.Errorf("parseStat(%q): no error", in)
		}
	}
}

func TestParseSyscall(t *testing.T) {
	cases := []struct {
		in   string
		want syscallState
	}{
		{"running\n", syscallState{Running: true}},
		{"-1 0x7ffd1000 0x401000\n", syscallState{Nr: -1, SP: 0x7ffd1000, PC: 0x401000}},
		{"202 0x55550000 0x80 0x2 0x0 0x0 0x0 0x7ffd2000 0x7f0000001234\n", syscallState{
			Nr: 202, Args: [6]uint64{0x55550000, 0x80, 2}, SP: 0x7ffd2000, PC: 0x7f0000001234}},
	}
	for _, c := range cases {
		got, err := parseSyscall([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("parseSyscall(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "202 0x1", "x 0x1 0x2", "202 0xZZ 0x1 0x2 0x3 0x4 0x5 0x6 0x7"} {
		if _, err := parseSyscall([]byte(bad)); err == nil {
			t.Errorf("parseSyscall(%q): no error", bad)
		}
	}
}

func TestFindMapping(t *testing.T) {
	ms := []module.Mapping{{Start: 0x1000, End: 0x2000}, {Start: 0x2000, End: 0x3000, Offset: 0x1000}, {Start: 0x5000, End: 0x6000}}
	if m, ok := findMapping(ms, 0x2800); !ok || m.Offset != 0x1000 {
		t.Fatalf("findMapping(0x2800) = %+v, %v", m, ok)
	}
	for _, addr := range []uint64{0xfff, 0x3000, 0x4000, 0x6000} {
		if _, ok := findMapping(ms, addr); ok {
			t.Errorf("findMapping(%#x) found a mapping", addr)
		}
	}
}

func TestFutexOp(t *testing.T) {
	if got := futexOp(0x80); got != "FUTEX_WAIT_PRIVATE" {
		t.Errorf("futexOp(0x80) = %q", got)
	}
	if got := futexOp(0x189); got != "FUTEX_WAIT_BITSET_PRIVATE" {
		t.Errorf("futexOp(0x189) = %q", got)
	}
}
