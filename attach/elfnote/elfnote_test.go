package elfnote

import (
	"encoding/binary"
	"errors"
	"testing"
)

// note builds one note as a linker writes it (hand-made bytes).
func note(name string, typ uint32, desc []byte, align int) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, uint32(len(name)+1))
	b = le.AppendUint32(b, uint32(len(desc)))
	b = le.AppendUint32(b, typ)
	b = append(b, name...)
	b = append(b, 0)
	for len(b)%align != 0 {
		b = append(b, 0)
	}
	b = append(b, desc...)
	for len(b)%align != 0 {
		b = append(b, 0)
	}
	return b
}

func TestWalk(t *testing.T) {
	le := binary.LittleEndian
	id := []byte{0xde, 0xad, 0xbe, 0xef, 1}
	data := append(note("GNU", 1, []byte{0, 0, 0, 0, 3, 0, 0, 0}, 4), note("GNU", NTGNUBuildID, id, 4)...)
	if got := GNUBuildID(data, le); got != "deadbeef01" {
		t.Errorf("GNUBuildID = %q, want deadbeef01", got)
	}
	if got := GNUBuildID(note("CORE", NTGNUBuildID, id, 4), le); got != "" {
		t.Errorf("a CORE note of type 3 is no build id: %q", got)
	}
	// 8-byte aligned notes (PT_NOTE with p_align 8), and zero padding after.
	data8 := append(append(note("CORE", 1, []byte{1, 2, 3}, 8), note("LINUX", 0x202, []byte{4}, 8)...), 0, 0, 0, 0)
	var got []Note
	if err := Walk(data8, le, 8, func(n Note) bool { got = append(got, n); return true }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "CORE" || string(got[0].Desc) != "\x01\x02\x03" || got[1].Name != "LINUX" || got[1].Off != 32 {
		t.Errorf("notes %+v", got)
	}
	// Cut inside the second note's payload: the first is read, then the cut is said.
	cut := data[:len(data)-4]
	var n int
	err := Walk(cut, le, 4, func(Note) bool { n++; return true })
	var te *TruncatedError
	if !errors.As(err, &te) || te.Off != 24 || n != 1 {
		t.Errorf("cut: %d notes, err %v; want 1 and truncated at 0x18", n, err)
	}
	// A size near 2^32 must not overflow the bounds checks.
	huge := le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, 4), 0xfffffffc), 3)
	if err := Walk(append(huge, "GNU\x00"...), le, 4, func(Note) bool { return true }); !errors.As(err, &te) {
		t.Errorf("huge descsz: %v, want truncated", err)
	}
}
