package module

import (
	"debug/elf"
	"reflect"
	"strings"
	"testing"
)

func TestParseMaps(t *testing.T) {
	in := `55d0c8a00000-55d0c8a01000 r--p 00000000 08:01 1311 /usr/bin/prog
55d0c8a01000-55d0c8a02000 r-xp 00001000 08:01 1311 /usr/bin/prog
7f0000000000-7f0000021000 rw-p 00000000 00:00 0 
7f1c2a000000-7f1c2a022000 r--p 00000000 fd:00 42                         /opt/my app/lib foo.so (deleted)
7ffd5c9f0000-7ffd5c9f2000 r-xp 00000000 00:00 0                          [vdso]
`
	got, err := ParseMaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x55d0c8a00000, End: 0x55d0c8a01000, Offset: 0, Perms: "r--p", Dev: "08:01", Inode: 1311, Path: "/usr/bin/prog"},
		{Start: 0x55d0c8a01000, End: 0x55d0c8a02000, Offset: 0x1000, Perms: "r-xp", Dev: "08:01", Inode: 1311, Path: "/usr/bin/prog"},
		{Start: 0x7f0000000000, End: 0x7f0000021000, Perms: "rw-p", Dev: "00:00"},
		{Start: 0x7f1c2a000000, End: 0x7f1c2a022000, Perms: "r--p", Dev: "fd:00", Inode: 42, Path: "/opt/my app/lib foo.so", Deleted: true},
		{Start: 0x7ffd5c9f0000, End: 0x7ffd5c9f2000, Perms: "r-xp", Dev: "00:00", Path: "[vdso]"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}

	for _, bad := range []string{"zz-10 r--p 0 0:0 0", "10-5 r--p 0 0:0 0 /x", "10-20 r--p", "10-20 r--p 0 0:0 x /x"} {
		ms, err := ParseMaps(strings.NewReader("10-20 r--p 0 0:0 0\n" + bad + "\n"))
		if err == nil || !strings.Contains(err.Error(), "maps line 2") || len(ms) != 1 {
			t.Errorf("%q: %v, %d mappings; want an error naming line 2 and the first mapping", bad, err, len(ms))
		}
	}
}

// A PIE laid out as GNU ld does with -z separate-code: the read-only data
// and the start of the data segment share file page 0x2000, so two "r--p"
// mappings have offset 0x2000 once RELRO is made read-only.
var pieLoads = []elf.ProgHeader{
	{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 0, Vaddr: 0, Filesz: 0x788, Memsz: 0x788},
	{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 0x1000, Vaddr: 0x1000, Filesz: 0x2a1, Memsz: 0x2a1},
	{Type: elf.PT_LOAD, Flags: elf.PF_R, Off: 0x2000, Vaddr: 0x2000, Filesz: 0x164, Memsz: 0x164},
	{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_W, Off: 0x2dd0, Vaddr: 0x3dd0, Filesz: 0x270, Memsz: 0x280},
}

func pieMappings(bias uint64) []Mapping {
	return []Mapping{
		{Start: bias, End: bias + 0x1000, Offset: 0, Perms: "r--p"},
		{Start: bias + 0x1000, End: bias + 0x2000, Offset: 0x1000, Perms: "r-xp"},
		{Start: bias + 0x2000, End: bias + 0x3000, Offset: 0x2000, Perms: "r--p"},
		{Start: bias + 0x3000, End: bias + 0x4000, Offset: 0x2000, Perms: "r--p"}, // RELRO
		{Start: bias + 0x4000, End: bias + 0x5000, Offset: 0x3000, Perms: "rw-p"},
	}
}

func TestBias(t *testing.T) {
	f := &File{Name: "prog", Type: elf.ET_DYN, Loads: pieLoads}
	const bias = 0x555555554000
	for i, m := range pieMappings(bias) {
		got, ok := f.Bias(m)
		if i == 3 {
			// Ambiguous alone: the read-only data segment matches as well.
			if !ok || !containsU64(f.biases(m), bias) {
				t.Errorf("RELRO mapping: biases %#x, want %#x among them", f.biases(m), uint64(bias))
			}
			continue
		}
		if !ok || got != bias {
			t.Errorf("mapping %d (%+v): Bias = %#x %v, want %#x", i, m, got, ok, uint64(bias))
		}
	}
	if _, ok := f.Bias(Mapping{Start: bias + 0x10000, End: bias + 0x11000, Offset: 0x10000, Perms: "r--p"}); ok {
		t.Error("a mapping past the file's segments has a bias")
	}

	exec := &File{Name: "prog", Type: elf.ET_EXEC, Loads: []elf.ProgHeader{
		{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 0, Vaddr: 0x400000, Filesz: 0x1000, Memsz: 0x1000},
	}}
	if b, ok := exec.Bias(Mapping{Start: 0x400000, End: 0x401000, Perms: "r-xp"}); !ok || b != 0 {
		t.Errorf("ET_EXEC: Bias = %#x %v, want 0", b, ok)
	}
}

func TestSpaceJoinsAmbiguousMappings(t *testing.T) {
	f := &File{Name: "prog", Type: elf.ET_DYN, Loads: pieLoads}
	s := NewSpace()
	// The same file loaded twice (dlmopen) gives two Loaded.
	for _, bias := range []uint64{0x555555554000, 0x7f0000000000} {
		for _, m := range pieMappings(bias) {
			m.Path = "/usr/bin/prog"
			if _, ok := s.Add(f, m); !ok {
				t.Fatalf("Add(%+v) refused", m)
			}
		}
	}
	mods := s.Modules()
	if len(mods) != 2 || mods[0].Bias != 0x555555554000 || mods[1].Bias != 0x7f0000000000 {
		t.Fatalf("Modules = %+v, want two loads at their biases", mods)
	}
	if mods[0].Start != 0x555555554000 || mods[0].End != 0x555555554000+0x5000 {
		t.Errorf("Modules[0] spans %#x-%#x", mods[0].Start, mods[0].End)
	}
	for _, pc := range []uint64{0x555555554000 + 0x3010, 0x7f0000000000 + 0x3010} {
		l := s.Lookup(pc)
		if l == nil || pc-l.Bias != 0x3010 {
			t.Errorf("Lookup(%#x) = %+v, want the load whose bias gives 0x3010", pc, l)
		}
	}
	if s.Lookup(0x555555554000+0x5000) != nil || s.Lookup(0) != nil {
		t.Error("Lookup outside every mapping found something")
	}
}

func containsU64(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
