package module

import (
	"cmp"
	"debug/dwarf"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"

	"github.com/hangdoc/hangdoc/stacks"
)

// Inline is one function inlined at an address: its name and the place
// it was inlined at (the call site in the function that contains it).
type Inline struct {
	Func     string // qualified name as gdb prints it ("std::mutex::lock")
	CallFile string
	CallLine int
}

// inlineTable answers which inlined functions cover an address, from
// DW_TAG_inlined_subroutine. It costs in two steps, both on demand: the
// first lookup reads which address ranges each compilation unit covers
// (its top entry only), and the first lookup in a unit reads that unit's
// entries. Units no looked-up address falls in are never read.
type inlineTable struct {
	mu    sync.Mutex
	ready bool
	units []unitRange // sorted by lo
	read  map[dwarf.Offset]*unitInlines
	err   error
}

type unitRange struct {
	lo, hi uint64
	unit   dwarf.Offset
}

// unitInlines is one compilation unit's inlined ranges, sorted by lo,
// and for a Rust unit its functions' ranges (funcs, depth -1): gdb names
// Rust functions by their DWARF names, which the symbols' legacy mangling
// does not give ("<std::…::Mutex>::lock_contended").
type unitInlines struct {
	ranges []inlineRange
	funcs  []inlineRange
}

type inlineRange struct {
	lo, hi uint64
	depth  int // how many inlined subroutines enclose this one
	Inline
}

// maxInlineDepth bounds nesting read from a file (corrupt DWARF could
// claim any depth).
const maxInlineDepth = 64

// Inlines returns the functions inlined at the link-time address addr,
// innermost first; none when the file has no DWARF or no inlining there.
// fn is the DWARF name of the function holding them when that is the
// name gdb prints instead of the symbol's (Rust), else "".
func (f *File) Inlines(addr uint64) (fn string, inl []Inline) {
	d, _ := f.dwarf.get(filepath.Base(f.Name))
	if d == nil {
		return "", nil
	}
	t := &f.inl
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ready {
		t.ready = true
		t.readUnits(d, filepath.Base(f.Name))
	}
	i := sort.Search(len(t.units), func(i int) bool { return t.units[i].lo > addr }) - 1
	// Units may overlap in corrupt or odd files: look back a little.
	for j := i; j >= 0 && i-j < 8; j-- {
		u := t.units[j]
		if addr < u.lo || addr >= u.hi {
			continue
		}
		ui := t.read[u.unit]
		if ui == nil {
			ui = t.readUnit(d, u.unit, filepath.Base(f.Name))
			t.read[u.unit] = ui
		}
		return ui.funcAt(addr), ui.at(addr)
	}
	return "", nil
}

// InlinesError says why the inline tables could not be read, once a
// lookup has tried; nil when they were read or there are none.
func (f *File) InlinesError() error {
	f.inl.mu.Lock()
	defer f.inl.mu.Unlock()
	return f.inl.err
}

// at returns the inlined functions covering addr, innermost first.
func (ui *unitInlines) at(addr uint64) []Inline {
	var hit []inlineRange
	for _, r := range ui.ranges {
		if r.lo > addr {
			break
		}
		if addr < r.hi {
			hit = append(hit, r)
		}
	}
	slices.SortStableFunc(hit, func(a, b inlineRange) int { return b.depth - a.depth })
	out := make([]Inline, 0, len(hit))
	for i, r := range hit {
		// One range per depth: a second one at the same depth would be
		// a sibling that overlaps, which DWARF does not allow.
		if i > 0 && r.depth == hit[i-1].depth {
			continue
		}
		out = append(out, r.Inline)
	}
	return out
}

// funcAt names the function covering addr in a Rust unit, "" elsewhere.
func (ui *unitInlines) funcAt(addr uint64) string {
	i := sort.Search(len(ui.funcs), func(i int) bool { return ui.funcs[i].lo > addr }) - 1
	if i >= 0 && addr < ui.funcs[i].hi {
		return ui.funcs[i].Func
	}
	return ""
}

// readUnits reads the address ranges of every compilation unit. Called
// with t.mu held.
func (t *inlineTable) readUnits(d *dwarf.Data, base string) {
	t.read = map[dwarf.Offset]*unitInlines{}
	defer func() {
		if p := recover(); p != nil {
			t.units, t.err = nil, fmt.Errorf("%s: .debug_info: corrupt: %v", base, p)
		}
	}()
	t.err = eachUnit(d, base, func(e *dwarf.Entry) {
		if e.Tag != dwarf.TagCompileUnit && e.Tag != dwarf.TagPartialUnit {
			return
		}
		ranges, err := d.Ranges(e)
		if err != nil {
			return
		}
		for _, rg := range ranges {
			if rg[0] < rg[1] {
				t.units = append(t.units, unitRange{rg[0], rg[1], e.Offset})
			}
		}
	})
	slices.SortFunc(t.units, func(a, b unitRange) int { return cmp.Compare(a.lo, b.lo) })
}

// readUnit reads one unit's inlined subroutines: their ranges, call
// sites and the names of what they inline. Called with t.mu held.
func (t *inlineTable) readUnit(d *dwarf.Data, off dwarf.Offset, base string) (ui *unitInlines) {
	ui = &unitInlines{}
	defer func() {
		if p := recover(); p != nil {
			ui = &unitInlines{}
			t.err = fmt.Errorf("%s: .debug_info at %#x: corrupt: %v", base, off, p)
		}
	}()
	r := d.Reader()
	r.Seek(off)
	cu, err := r.Next()
	if err != nil || cu == nil {
		return ui
	}
	var files []*dwarf.LineFile
	if lr, err := d.LineReader(cu); err == nil && lr != nil {
		files = lr.Files()
	}
	lang, _ := cu.Val(dwarf.AttrLanguage).(int64)
	names := namer{d: d, unit: map[dwarf.Offset]*dieName{}, rust: lang == dwLangRust}
	type level struct {
		scope  string // the qualified name this level opens ("std::mutex")
		inline bool
	}
	stack := []level{{}}
	var pending []pendingRange
	if !cu.Children {
		return ui
	}
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil {
			t.err = &Error{File: base, Section: ".debug_info", Off: int64(off), Err: err}
			break
		}
		if e == nil {
			break
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		top := stack[len(stack)-1]
		scope := top.scope
		name, _ := e.Val(dwarf.AttrName).(string)
		switch e.Tag {
		case dwarf.TagNamespace, dwarf.TagClassType, dwarf.TagStructType, dwarf.TagUnionType, dwarf.TagEnumerationType:
			if name == "" && e.Tag == dwarf.TagNamespace {
				name = "(anonymous namespace)"
			}
			if name != "" {
				scope = join(scope, name)
			}
		case dwarf.TagSubprogram:
			dn := &dieName{}
			if name != "" {
				dn.name = join(top.scope, name)
			}
			dn.linkage, _ = e.Val(dwarf.AttrLinkageName).(string)
			if dn.linkage == "" {
				dn.linkage, _ = e.Val(attrMIPSLinkageName).(string)
			}
			dn.spec, _ = e.Val(dwarf.AttrSpecification).(dwarf.Offset)
			if dn.spec == 0 {
				dn.spec, _ = e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
			}
			names.unit[e.Offset] = dn
			if names.rust {
				if ranges, err := d.Ranges(e); err == nil {
					for _, rg := range ranges {
						if rg[0] < rg[1] {
							pending = append(pending, pendingRange{inlineRange{lo: rg[0], hi: rg[1], depth: -1}, e.Offset})
						}
					}
				}
			}
		case dwarf.TagInlinedSubroutine:
			depth := 0
			for _, l := range stack {
				if l.inline {
					depth++
				}
			}
			origin, _ := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
			ir := inlineRange{depth: depth}
			if line, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
				ir.CallLine = int(line)
			}
			if fi, ok := e.Val(dwarf.AttrCallFile).(int64); ok && fi >= 0 && fi < int64(len(files)) && files[fi] != nil {
				ir.CallFile = files[fi].Name
			}
			if ranges, err := d.Ranges(e); err == nil && depth < maxInlineDepth {
				for _, rg := range ranges {
					if rg[0] < rg[1] {
						ir.lo, ir.hi = rg[0], rg[1]
						pending = append(pending, pendingRange{ir, origin})
					}
				}
			}
		}
		if e.Children {
			if noFunctionsUnder(e) {
				// Parameters, enumerators, a declaration's
				// parameters: skipped by DW_AT_sibling, unread.
				r.SkipChildren()
				continue
			}
			stack = append(stack, level{scope: scope, inline: e.Tag == dwarf.TagInlinedSubroutine})
		}
	}
	ui.ranges = make([]inlineRange, 0, len(pending))
	for _, p := range pending {
		p.Func = names.of(p.origin, 0)
		switch {
		case p.depth < 0:
			if p.Func != "" {
				ui.funcs = append(ui.funcs, p.inlineRange)
			}
			continue
		case p.Func == "":
			p.Func = "??"
		}
		ui.ranges = append(ui.ranges, p.inlineRange)
	}
	byLo := func(a, b inlineRange) int { return cmp.Compare(a.lo, b.lo) }
	slices.SortStableFunc(ui.ranges, byLo)
	slices.SortStableFunc(ui.funcs, byLo)
	return ui
}

// dwLangRust is DW_LANG_Rust.
const dwLangRust = 0x1c

// noFunctionsUnder says whether an entry's children can hold no function
// definition, inlined call or scope of one: most of a C++ unit is such
// entries (declarations of the headers' functions, their parameters).
func noFunctionsUnder(e *dwarf.Entry) bool {
	switch e.Tag {
	case dwarf.TagSubprogram:
		decl, _ := e.Val(dwarf.AttrDeclaration).(bool)
		return decl
	case dwarf.TagEnumerationType, dwarf.TagSubroutineType, dwarf.TagFormalParameter, dwarf.TagVariable,
		dwarf.TagMember, dwarf.TagArrayType, dwarf.TagTemplateTypeParameter, dwarf.TagTemplateValueParameter,
		dwarf.TagInheritance, dwarf.TagTypedef, dwarf.TagBaseType, dwarf.TagPointerType, dwarf.TagReferenceType:
		return true
	}
	return false
}

// pendingRange is a range whose name is looked up once the unit is read.
type pendingRange struct {
	inlineRange
	origin dwarf.Offset
}

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name, which older GCCs emit
// instead of DW_AT_linkage_name.
const attrMIPSLinkageName dwarf.Attr = 0x2007

// dieName is what names a subprogram entry: its qualified DW_AT_name,
// its linkage name, or the entry it completes (DW_AT_specification,
// DW_AT_abstract_origin).
type dieName struct {
	name, linkage string
	spec          dwarf.Offset
	foreign       bool // read alone: name is not qualified
}

// namer names the functions inlined subroutines refer to, from the
// entries of their unit or, for a reference into another unit, from that
// entry alone.
type namer struct {
	d    *dwarf.Data
	unit map[dwarf.Offset]*dieName
	rust bool // the unit is Rust
}

func (n *namer) of(off dwarf.Offset, hops int) string {
	if off == 0 || hops > 4 {
		return ""
	}
	dn := n.unit[off]
	if dn == nil {
		dn = n.foreign(off)
	}
	// gdb names a C++ function by its demangled linkage name, a Rust
	// one (whose linkage name carries a hash) and a C one by its DWARF
	// name qualified by its scopes; a subprogram that completes a
	// declaration has its names there.
	if n.rust && dn.name != "" && dn.spec == 0 && !dn.foreign {
		return dn.name
	}
	if dn.linkage != "" {
		return stacks.Demangle(dn.linkage)
	}
	if s := n.of(dn.spec, hops+1); s != "" {
		return s
	}
	return dn.name
}

// foreign reads an entry outside the unit being read (DW_FORM_ref_addr):
// its DWARF name is not qualified by scopes.
func (n *namer) foreign(off dwarf.Offset) *dieName {
	dn := &dieName{foreign: true}
	n.unit[off] = dn
	r := n.d.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil || e == nil {
		return dn
	}
	dn.linkage, _ = e.Val(dwarf.AttrLinkageName).(string)
	if dn.linkage == "" {
		dn.linkage, _ = e.Val(attrMIPSLinkageName).(string)
	}
	dn.name, _ = e.Val(dwarf.AttrName).(string)
	dn.spec, _ = e.Val(dwarf.AttrSpecification).(dwarf.Offset)
	if dn.spec == 0 {
		dn.spec, _ = e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
	}
	return dn
}

func join(scope, name string) string {
	if scope == "" {
		return name
	}
	return scope + "::" + name
}
