package core_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/attach/core"
	"github.com/hangdoc/hangdoc/attach/unwind"
)

// A synthetic core, built field by field, for the cases gcore and the
// kernel do not write on demand.

var le = binary.LittleEndian

type load struct {
	addr  uint64
	data  []byte
	memsz uint64 // 0: len(data)
	flags uint32
}

// buildCore lays out an ELF header, a PT_NOTE header, one PT_LOAD header
// per load, the notes, then the loads' data.
func buildCore(notes []byte, loads ...load) []byte {
	nph := 1 + len(loads)
	off := uint64(64 + 56*nph)
	b := make([]byte, 64)
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 4)  // ET_CORE
	le.PutUint16(b[18:], 62) // EM_X86_64
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[32:], 64) // phoff
	le.PutUint16(b[52:], 64)
	le.PutUint16(b[54:], 56)
	le.PutUint16(b[56:], uint16(nph))
	ph := func(typ, flags uint32, off, vaddr, filesz, memsz, align uint64) {
		b = le.AppendUint32(b, typ)
		b = le.AppendUint32(b, flags)
		b = le.AppendUint64(b, off)
		b = le.AppendUint64(b, vaddr)
		b = le.AppendUint64(b, 0)
		b = le.AppendUint64(b, filesz)
		b = le.AppendUint64(b, memsz)
		b = le.AppendUint64(b, align)
	}
	ph(4, 4, off, 0, uint64(len(notes)), 0, 4)
	off += uint64(len(notes))
	for _, l := range loads {
		memsz := l.memsz
		if memsz == 0 {
			memsz = uint64(len(l.data))
		}
		ph(1, l.flags, off, l.addr, uint64(len(l.data)), memsz, 1)
		off += uint64(len(l.data))
	}
	b = append(b, notes...)
	for _, l := range loads {
		b = append(b, l.data...)
	}
	return b
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func note(name string, typ uint32, desc []byte) []byte {
	var b []byte
	b = le.AppendUint32(b, uint32(len(name)+1))
	b = le.AppendUint32(b, uint32(len(desc)))
	b = le.AppendUint32(b, typ)
	b = pad4(append(append(b, name...), 0))
	return pad4(append(b, desc...))
}

// prstatus: pr_reg[i] = base+i, so the mapping to DWARF numbers shows.
func prstatus(tid int32, sig int16, base uint64) []byte {
	d := make([]byte, 336)
	le.PutUint16(d[12:], uint16(sig))
	le.PutUint32(d[32:], uint32(tid))
	for i := range 27 {
		le.PutUint64(d[112+8*i:], base+uint64(i))
	}
	return note("CORE", 1, d)
}

func prpsinfo(pid int32, fname, args string) []byte {
	d := make([]byte, 136)
	le.PutUint32(d[24:], uint32(pid))
	copy(d[40:56], fname)
	copy(d[56:136], args)
	return note("CORE", 3, d)
}

func fileNote(page uint64, ms ...core.Mapping) []byte {
	var d []byte
	d = le.AppendUint64(d, uint64(len(ms)))
	d = le.AppendUint64(d, page)
	for _, m := range ms {
		d = le.AppendUint64(d, m.Start)
		d = le.AppendUint64(d, m.End)
		d = le.AppendUint64(d, m.Offset/page)
	}
	for _, m := range ms {
		d = append(append(d, m.Path...), 0)
	}
	return note("CORE", 0x46494c45, d)
}

func auxv(kv ...uint64) []byte {
	var d []byte
	for _, v := range kv {
		d = le.AppendUint64(d, v)
	}
	return note("CORE", 6, append(d, make([]byte, 16)...))
}

func synthCore() []byte {
	notes := slicesConcat(
		prpsinfo(4242, "patient", "./patient --hang"),
		prstatus(4242, 6, 100),
		note("LINUX", 0x202, make([]byte, 24)), // NT_X86_XSTATE: skipped
		prstatus(4243, 0, 200),
		auxv(core.AtSysinfoEhdr, 0x7fff0000, core.AtEntry, 0x401000),
		fileNote(4096,
			core.Mapping{Start: 0x400000, End: 0x401000, Offset: 0, Path: "/bin/patient"},
			core.Mapping{Start: 0x401000, End: 0x403000, Offset: 0x1000, Path: "/bin/patient"},
			core.Mapping{Start: 0x7f0000, End: 0x7f1000, Offset: 0x3000, Path: "/lib/libc.so.6"}),
	)
	return buildCore(notes,
		load{addr: 0x1000, data: []byte("first segment---")},
		load{addr: 0x1010, data: []byte("adjacent segment")},
		load{addr: 0x2000, data: []byte("short"), memsz: 0x1000}, // dumped in part
	)
}

func slicesConcat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

func TestSynthCore(t *testing.T) {
	data := synthCore()
	f, err := core.NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.PID != 4242 || f.Name != "patient" || f.Args != "./patient --hang" {
		t.Errorf("process: %d %q %q", f.PID, f.Name, f.Args)
	}
	if len(f.Threads) != 2 || f.Threads[0].TID != 4242 || f.Threads[0].Signal != 6 || f.Threads[1].TID != 4243 {
		t.Fatalf("threads: %+v", f.Threads)
	}
	// user_regs_struct: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx
	// rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base …
	want := map[int]uint64{15: 0, 14: 1, 13: 2, 12: 3, unwind.RBP: 4, unwind.RBX: 5, 11: 6, 10: 7, 9: 8, 8: 9,
		unwind.RAX: 10, unwind.RCX: 11, unwind.RDX: 12, unwind.RSI: 13, unwind.RDI: 14, unwind.RIP: 16, unwind.RSP: 19}
	th := f.Threads[1]
	for r, slot := range want {
		if !th.Regs.Has(r) || th.Regs.Val[r] != 200+slot {
			t.Errorf("%s = %d, want %d", unwind.RegName(r), th.Regs.Val[r], 200+slot)
		}
	}
	if th.Regs.Valid != 1<<unwind.NumRegs-1 {
		t.Errorf("valid %#x, want all", th.Regs.Valid)
	}
	if th.FSBase != 221 || th.GSBase != 222 {
		t.Errorf("fs_base %d gs_base %d", th.FSBase, th.GSBase)
	}
	if v, ok := f.AuxVal(core.AtSysinfoEhdr); !ok || v != 0x7fff0000 {
		t.Errorf("AT_SYSINFO_EHDR = %#x %v", v, ok)
	}
	if len(f.Mappings) != 3 || f.Mappings[1] != (core.Mapping{Start: 0x401000, End: 0x403000, Offset: 0x1000, Path: "/bin/patient"}) ||
		f.Mappings[2].Path != "/lib/libc.so.6" || f.Mappings[2].Offset != 0x3000 {
		t.Errorf("mappings: %+v", f.Mappings)
	}

	for _, tc := range []struct {
		addr uint64
		n    int
		want string
		bad  uint64 // unreadable address, 0 for none
	}{
		{0x1000, 5, "first", 0},
		{0x100d, 8, "---adjac", 0}, // across two segments
		{0x2000, 5, "short", 0},
		{0x2003, 4, "rt", 0x2005}, // past FileSize: not in the core
		{0x0fff, 2, "", 0x0fff},
		{0x1020, 2, "", 0x1020},
		{^uint64(0), 2, "", ^uint64(0)},
	} {
		p := make([]byte, tc.n)
		n, err := f.ReadAt(p, tc.addr)
		if string(p[:n]) != tc.want {
			t.Errorf("ReadAt(%#x) = %q, want %q", tc.addr, p[:n], tc.want)
		}
		var ue *unwind.UnreadableError
		if tc.bad == 0 && err != nil || tc.bad != 0 && (!errors.As(err, &ue) || ue.Addr != tc.bad) {
			t.Errorf("ReadAt(%#x): error %v, want unreadable at %#x", tc.addr, err, tc.bad)
		}
	}
}

func TestBadCores(t *testing.T) {
	good := synthCore()
	notesOff := 64 + 56*4
	for _, tc := range []struct {
		name   string
		mangle func([]byte) []byte
		err    string
		noFile bool // nothing usable
	}{
		{"empty", func([]byte) []byte { return nil }, "core: ELF header at 0x0: truncated", true},
		{"not ELF", func(b []byte) []byte { b[0] = 'X'; return b }, "core: ELF header at 0x0: not an ELF file", true},
		{"32-bit", func(b []byte) []byte { b[4] = 1; return b }, "not a little-endian 64-bit ELF file", true},
		{"executable", func(b []byte) []byte { b[16] = 2; return b }, "ELF type 2, not a core file", true},
		{"32-bit arm", func(b []byte) []byte { b[18] = 40; return b }, "machine 40 (EM_ARM), not x86-64 or arm64", true},
		{"arm64 with x86-64 notes", func(b []byte) []byte { b[18] = 183; return b }, "NT_PRSTATUS at 0x1bc: 336 bytes, want 392", false},
		{"too many phdrs", func(b []byte) []byte { le.PutUint16(b[56:], 60000); return b }, "60000 program headers do not fit the file", true},
		{"truncated note", func(b []byte) []byte {
			le.PutUint32(b[notesOff+4:], 1<<20) // prpsinfo's descsz
			return b
		}, "core: note at 0x120: truncated", false},
		{"short prstatus", func(b []byte) []byte {
			return buildCore(note("CORE", 1, make([]byte, 100)), load{addr: 0x1000, data: []byte("x")})
		}, "core: NT_PRSTATUS at 0xb0: 100 bytes, want 336", false},
		{"NT_FILE count", func(b []byte) []byte {
			d := le.AppendUint64(le.AppendUint64(nil, 1<<40), 4096)
			return buildCore(note("CORE", 0x46494c45, d))
		}, "core: NT_FILE at 0x78: 1099511627776 entries do not fit in 16 bytes", false},
		{"NT_FILE names", func(b []byte) []byte {
			n := fileNote(4096, core.Mapping{Start: 1, End: 2, Path: "a"}, core.Mapping{Start: 3, End: 4, Path: "b"})
			n[len(n)-1] = 'x' // no NUL after "b"
			return buildCore(n)
		}, "core: NT_FILE at 0x78: 1 paths for 2 entries", false},
		{"truncated file", func(b []byte) []byte { return b[:len(b)-3] }, "extends past the end of the file", false},
	} {
		b := tc.mangle(append([]byte(nil), good...))
		f, err := core.NewFile(bytes.NewReader(b), int64(len(b)))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
		if (f == nil) != tc.noFile {
			t.Errorf("%s: file %v, want nil: %v", tc.name, f != nil, tc.noFile)
		}
	}

	// A truncated core keeps what is there.
	b := good[:len(good)-3]
	f, _ := core.NewFile(bytes.NewReader(b), int64(len(b)))
	p := make([]byte, 5)
	if n, _ := f.ReadAt(p, 0x2000); n != 2 || string(p[:2]) != "sh" {
		t.Errorf("truncated segment: read %q", p[:n])
	}
	if len(f.Threads) != 2 {
		t.Errorf("truncated core lost its threads")
	}
}

func FuzzCore(f *testing.F) {
	f.Add(synthCore())
	f.Add(buildCore(fileNote(4096, core.Mapping{Start: 1, End: 2, Path: "a"})))
	f.Add(buildCore(note("CORE", 1, make([]byte, 336)), load{addr: ^uint64(0) - 4, data: []byte("wrap!!!!")}))
	root := f.TempDir() // mapped files resolve under it: none exist
	f.Fuzz(func(t *testing.T, data []byte) {
		cf, _ := core.NewFile(bytes.NewReader(data), int64(len(data)))
		if cf == nil {
			return
		}
		p := make([]byte, 64)
		for _, s := range cf.Segments {
			cf.ReadAt(p, s.Addr)
			cf.ReadAt(p, s.Addr+s.Size-1)
		}
		for _, th := range cf.Threads {
			cf.ReadAt(p, th.Regs.Val[unwind.RSP])
		}
		mem := cf.WithFiles(root)
		for _, m := range cf.Mappings {
			mem.ReadAt(p, m.Start)
		}
		mem.Close()
	})
}
