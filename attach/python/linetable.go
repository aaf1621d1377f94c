package python

// The location table (co_linetable) of CPython 3.11 and later, as
// Objects/locations.md describes it: a sequence of entries, each starting
// with a byte whose top bit is set; bits 3-6 are a code, bits 0-2 the
// number of code units covered minus one. Code 15 is "no location", 14
// the long form and 13 "no column" (both with a signed varint line
// delta), 10-12 one-line forms with a delta of code-10, and 0-9 short
// forms on the same line.
const (
	locNone     = 15
	locLong     = 14
	locNoColumn = 13
	locOneLine0 = 10
)

// addrToLine returns the line of the instruction at byte offset addr
// (code units × 2), as PyCode_Addr2Line does: the first line for a
// negative offset (a frame that has not started), -1 for an instruction
// with no line, 0 when the table does not cover addr.
func addrToLine(table []byte, first int, addr int64) int {
	if addr < 0 {
		return first
	}
	line := first
	start := int64(0)
	for i := 0; i < len(table); {
		b := table[i]
		if b&0x80 == 0 {
			return 0 // not at an entry: a corrupt table
		}
		code := int(b>>3) & 15
		end := start + int64(b&7+1)*2
		delta := 0
		switch {
		case code == locLong || code == locNoColumn:
			delta = signedVarint(table[i+1:])
		case code >= locOneLine0 && code < locNoColumn:
			delta = code - locOneLine0
		}
		line += delta
		if start <= addr && addr < end {
			if code == locNone {
				return -1
			}
			return line
		}
		start = end
		for i++; i < len(table) && table[i]&0x80 == 0; i++ {
		}
	}
	return 0
}

// signedVarint reads the table's signed varint: 6 bits a byte, bit 6 for
// "more", the sign in the lowest bit of the value.
func signedVarint(b []byte) int {
	var val uint
	shift := uint(0)
	for i := 0; i < len(b) && i < 5; i++ {
		val |= uint(b[i]&63) << shift
		if b[i]&64 == 0 {
			break
		}
		shift += 6
	}
	if val&1 != 0 {
		return -int(val >> 1)
	}
	return int(val >> 1)
}
