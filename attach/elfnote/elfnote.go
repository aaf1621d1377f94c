// Package elfnote walks ELF notes, in a PT_NOTE segment or an SHT_NOTE
// section: the build ids of module files and of the files a core maps,
// and a core file's own notes (threads, mappings) all come through it.
package elfnote

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// A Note is one ELF note.
type Note struct {
	Name string // without its NUL padding: "GNU", "CORE", "LINUX"
	Type uint32
	Desc []byte // the payload, a slice of the data walked
	Off  uint64 // where the note starts in the data walked
}

// TruncatedError says that the note at Off runs past the end of the data.
type TruncatedError struct{ Off uint64 }

func (e *TruncatedError) Error() string { return fmt.Sprintf("note at %#x: truncated", e.Off) }

// Walk calls fn with each note of data, in order, until fn returns
// false. A note is namesz, descsz and type (4 bytes each, in order),
// then the name and the payload, each padded to align (4; 8 for a
// segment whose p_align says 8). The last note may lack its padding and
// zero bytes after the last note are padding; a note whose name or
// payload runs past the data ends the walk with a *TruncatedError.
func Walk(data []byte, order binary.ByteOrder, align uint64, fn func(Note) bool) error {
	if align != 8 {
		align = 4
	}
	for off := uint64(0); off < uint64(len(data)); {
		rest := uint64(len(data)) - off
		if rest < 12 {
			if !allZero(data[off:]) {
				return &TruncatedError{off}
			}
			return nil
		}
		namesz, descsz := uint64(order.Uint32(data[off:])), uint64(order.Uint32(data[off+4:]))
		typ := order.Uint32(data[off+8:])
		if namesz > rest || descsz > rest {
			return &TruncatedError{off}
		}
		descOff := alignUp(12+namesz, align)
		if descOff+descsz > rest {
			return &TruncatedError{off}
		}
		n := Note{
			Name: string(bytes.TrimRight(data[off+12:off+12+namesz], "\x00")),
			Type: typ,
			Desc: data[off+descOff : off+descOff+descsz],
			Off:  off,
		}
		if !fn(n) {
			return nil
		}
		off += alignUp(descOff+descsz, align)
	}
	return nil
}

// NTGNUBuildID is the type of the "GNU" note that holds a build id.
const NTGNUBuildID = 3

// GNUBuildID finds the build id among the notes of data and returns it
// in hex, as `readelf -n` and debuginfod spell it; "" when there is none.
func GNUBuildID(data []byte, order binary.ByteOrder) string {
	var id string
	Walk(data, order, 4, func(n Note) bool {
		if n.Type == NTGNUBuildID && n.Name == "GNU" && len(n.Desc) > 0 {
			id = hex.EncodeToString(n.Desc)
			return false
		}
		return true
	})
	return id
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) &^ (a - 1) }

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
