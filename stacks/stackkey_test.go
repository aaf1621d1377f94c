package stacks

import "testing"

// Each kind of key tells apart what it says and no more.
func TestStackKeyKinds(t *testing.T) {
	base := []Frame{{Module: "/lib/libc.so.6", Offset: 0x10, PC: 0x7f10}, {Func: "work", Module: "/bin/app", File: "app.c", Line: 12, PC: 0x401000}, {Func: "main", Line: 30, PC: 0x401100}}
	with := func(i int, edit func(*Frame)) []Frame {
		st := append([]Frame(nil), base...)
		edit(&st[i])
		return st
	}
	for _, c := range []struct {
		name                string
		st                  []Frame
		group, place, exact bool // the same key as base
	}{
		{"another line", with(1, func(f *Frame) { f.Line = 13 }), false, true, true},
		{"another pc", with(1, func(f *Frame) { f.PC = 0x401004 }), true, true, false},
		{"the innermost unnamed frame moved", with(0, func(f *Frame) { f.Offset, f.PC = 0x20, 0x7f20 }), false, true, false},
		{"another function", with(2, func(f *Frame) { f.Func = "start" }), false, false, false},
		{"a signal frame", with(0, func(f *Frame) { f.Signal = true }), false, false, true},
	} {
		for _, k := range []struct {
			kind StackKeyKind
			same bool
		}{{GroupKey, c.group}, {PlaceKey, c.place}, {ExactKey, c.exact}} {
			if same := StackKey(c.st, k.kind) == StackKey(base, k.kind); same != k.same {
				t.Errorf("%s: kind %d: same %v, want %v", c.name, k.kind, same, k.same)
			}
		}
	}
}
