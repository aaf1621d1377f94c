package module

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End uint64
	Offset     uint64 // file offset of Start
	Perms      string // "r-xp"
	Dev        string // "08:01"
	Inode      uint64
	Path       string // "" for anonymous memory; "[vdso]", "[heap]", … for special ones
	Deleted    bool   // the file was unlinked (" (deleted)" cut from Path)
}

// ParseMaps reads /proc/PID/maps. A line it cannot read is an error that
// names it; the mappings before it are returned too.
func ParseMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		m, err := parseMapsLine(line)
		if err != nil {
			return out, fmt.Errorf("maps line %d: %v", n, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

func parseMapsLine(line string) (Mapping, error) {
	var m Mapping
	// Five fields, then the path, which may hold spaces.
	rest := line
	var f [5]string
	for i := range f {
		rest = strings.TrimLeft(rest, " ")
		j := strings.IndexByte(rest, ' ')
		if j < 0 {
			if i < 4 {
				return m, fmt.Errorf("%q: too few fields", line)
			}
			j = len(rest)
		}
		f[i], rest = rest[:j], rest[j:]
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	var err error
	if !ok {
		return m, fmt.Errorf("%q: bad address range", f[0])
	}
	if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return m, fmt.Errorf("bad start address %q", lo)
	}
	if m.End, err = strconv.ParseUint(hi, 16, 64); err != nil || m.End < m.Start {
		return m, fmt.Errorf("bad end address %q", hi)
	}
	m.Perms = f[1]
	if m.Offset, err = strconv.ParseUint(f[2], 16, 64); err != nil {
		return m, fmt.Errorf("bad offset %q", f[2])
	}
	m.Dev = f[3]
	if m.Inode, err = strconv.ParseUint(f[4], 10, 64); err != nil {
		return m, fmt.Errorf("bad inode %q", f[4])
	}
	m.Path = strings.TrimLeft(rest, " ")
	if p, ok := strings.CutSuffix(m.Path, " (deleted)"); ok {
		m.Path, m.Deleted = p, true
	}
	return m, nil
}

// Bias returns the load bias of f in the process that made mapping m:
// runtime address = link-time address + bias. The mapping must map part
// of one of f's PT_LOAD segments; ok is false otherwise. For an ET_EXEC
// file the bias is 0.
//
// A mapping can be ambiguous: in a file whose segments share a file page,
// the read-only data and the RELRO part of the data segment are both
// "r--p" mappings of the same offset. Space.Add resolves that by keeping
// the bias the file's other mappings agree on; Bias returns the likeliest.
func (f *File) Bias(m Mapping) (bias uint64, ok bool) {
	b := f.biases(m)
	if len(b) == 0 {
		return 0, false
	}
	return b[0], true
}

// biases returns the bias implied by each PT_LOAD segment that m
// overlaps, the best match of permissions (x, then w) first.
func (f *File) biases(m Mapping) []uint64 {
	type cand struct {
		bias  uint64
		score int
	}
	var cs []cand
	size := m.End - m.Start
	for _, p := range f.Loads {
		if p.Filesz == 0 || m.Offset >= p.Off+p.Filesz || m.Offset+size <= p.Off {
			continue
		}
		score := 0
		if (p.Flags&elf.PF_X != 0) == strings.Contains(m.Perms, "x") {
			score += 2
		}
		if (p.Flags&elf.PF_W != 0) == strings.Contains(m.Perms, "w") {
			score++
		}
		// The kernel maps the page of the segment that holds file offset
		// m.Offset at m.Start, and file offset o is link-time address
		// p.Vaddr - p.Off + o (p.Vaddr ≡ p.Off modulo the page size).
		bias := m.Start - (p.Vaddr - p.Off + m.Offset)
		if f.Type == elf.ET_EXEC {
			bias = 0 // linked at its runtime addresses
		}
		cs = append(cs, cand{bias, score})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].score > cs[j].score })
	out := make([]uint64, len(cs))
	for i, c := range cs {
		out[i] = c.bias
	}
	return out
}
