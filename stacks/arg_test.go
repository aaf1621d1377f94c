package stacks

import (
	"encoding/json"
	"testing"
	"unsafe"
)

func TestNewArg(t *testing.T) {
	tests := []struct {
		v    string
		want Arg // Name and Value are filled in below
	}{
		// gdb
		{"0x5555555580a0 <server_lock>", Arg{Addr: 0x5555555580a0, Symbol: "server_lock", Exact: true}},
		{"0x5644c80fa128 <work_cond+40>", Arg{Addr: 0x5644c80fa128, Symbol: "work_cond+40", Exact: true}},
		{"futex@entry=0x560a61b6b100 <the_lock>", Arg{Addr: 0x560a61b6b100, Symbol: "the_lock", Exact: true}},
		{"0x401136 <Foo::operator<(Foo const&) const>", Arg{Addr: 0x401136, Symbol: "Foo::operator<(Foo const&) const", Exact: true}},
		{`0x4 "at x.c:1"`, Arg{Addr: 4, Exact: true}},
		{"0x0", Arg{Exact: true}},
		{"10221", Arg{}},
		{"-1", Arg{}},
		{"atfork_run_child", Arg{Symbol: "atfork_run_child"}},
		{"40 '('", Arg{}},
		{"<optimized out>", Arg{}},
		{"...", Arg{}},
		{"{a = 1, b = {2, 3}}", Arg{}},
		// lldb pads addresses
		{"0x000055926a28f100", Arg{Addr: 0x55926a28f100, Exact: true}},
		// Go: "?" marks a value that may be stale; "_" is no name
		{"0xc000012345", Arg{Addr: 0xc000012345, Exact: true}},
		{"0xc000012345?", Arg{Addr: 0xc000012345}},
		{"{0x1, 0x2}", Arg{}},
		{"_", Arg{}},
		// Python reprs
		{"<Condition at 0x7f2e6587a5d0>", Arg{}},
		{"0x", Arg{}},
	}
	for _, tt := range tests {
		want := tt.want
		want.Name, want.Value = "a", tt.v
		if got := NewArg("a", tt.v); got != want {
			t.Errorf("NewArg(%q) = %+v, want %+v", tt.v, got, want)
		}
	}
}

func TestArgInt(t *testing.T) {
	for _, tt := range []struct {
		v  string
		n  int64
		ok bool
	}{{"10221", 10221, true}, {"-1", -1, true}, {"expected@entry=7", 7, true}, {"40 '('", 0, false}, {"0x10", 0, false}, {"", 0, false}} {
		if n, ok := NewArg("a", tt.v).Int(); n != tt.n || ok != tt.ok {
			t.Errorf("NewArg(%q).Int() = %d, %v; want %d, %v", tt.v, n, ok, tt.n, tt.ok)
		}
	}
	if s := unsafe.Sizeof(Arg{}); s > 64 {
		t.Errorf("an Arg is %d bytes, want at most 64: goroutine dumps hold millions", s)
	}
}

// A document read back gives the arguments NewArg gives, though the JSON
// keeps only the text.
func TestArgJSONReadsThroughNewArg(t *testing.T) {
	a := NewArg("mutex", "0x5555555580a0 <server_lock>")
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"name":"mutex","value":"0x5555555580a0 \u003cserver_lock\u003e"}` {
		t.Errorf("JSON %s", b)
	}
	var back Arg
	if err := json.Unmarshal(b, &back); err != nil || back != a {
		t.Errorf("read back %+v, %v; want %+v", back, err, a)
	}
}
