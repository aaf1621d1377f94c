package core

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hangdoc/hangdoc/attach/elfnote"
	"github.com/hangdoc/hangdoc/attach/unwind"
)

// Note types in the "CORE" namespace (linux/elf.h).
const (
	ntPrstatus = 1
	ntPrpsinfo = 3
	ntAuxv     = 6
	ntFile     = 0x46494c45 // "FILE"
)

// Sizes of the note payloads (struct elf_prstatus: pr_reg, the
// registers, is 27 words on x86-64 and 34 on arm64).
const (
	prstatusSize      = 336 // x86-64
	prstatusSizeARM64 = 392
	prpsinfoSize      = 136 // struct elf_prpsinfo
	prRegOff          = 112 // pr_reg inside elf_prstatus
)

// userRegs maps struct user_regs_struct (pr_reg), in its order, to DWARF
// register numbers; -1 marks registers the unwinder does not use.
var userRegs = [27]int{
	15, 14, 13, 12, unwind.RBP, unwind.RBX, 11, 10, 9, 8, // r15 r14 r13 r12 rbp rbx r11 r10 r9 r8
	unwind.RAX, unwind.RCX, unwind.RDX, unwind.RSI, unwind.RDI, // rax rcx rdx rsi rdi
	-1, unwind.RIP, -1, -1, unwind.RSP, -1, // orig_rax rip cs eflags rsp ss
	-1, -1, -1, -1, -1, -1, // fs_base gs_base ds es fs gs
}

const (
	raxIdx     = 10
	origRAXIdx = 15
	fsBaseIdx  = 21
	gsBaseIdx  = 22
)

// parseNotes reads a PT_NOTE segment that sits at file offset base,
// padded to align (elfnote.Walk); the CORE notes are the core's.
func (f *File) parseNotes(data []byte, base, align uint64) error {
	var errs []error
	werr := elfnote.Walk(data, binary.LittleEndian, align, func(n elfnote.Note) bool {
		if n.Name == "CORE" {
			if err := f.note(n.Type, n.Desc, base+n.Off); err != nil {
				errs = append(errs, err)
			}
		}
		return true
	})
	if te := (*elfnote.TruncatedError)(nil); errors.As(werr, &te) {
		errs = append(errs, &FormatError{"note", base + te.Off, "truncated"})
	}
	return errors.Join(errs...)
}

func (f *File) note(typ uint32, desc []byte, at uint64) error {
	le := binary.LittleEndian
	switch typ {
	case ntPrstatus:
		if f.Arch == unwind.ARM64 {
			return f.prstatusARM64(desc, at)
		}
		if len(desc) < prstatusSize {
			return &FormatError{"NT_PRSTATUS", at, fmt.Sprintf("%d bytes, want %d", len(desc), prstatusSize)}
		}
		t := Thread{
			Signal: int(int16(le.Uint16(desc[12:]))),
			TID:    int(int32(le.Uint32(desc[32:]))),
		}
		for i, r := range userRegs {
			v := le.Uint64(desc[prRegOff+8*i:])
			if r >= 0 {
				t.Regs.Set(r, v)
			}
		}
		t.RAX = int64(le.Uint64(desc[prRegOff+8*raxIdx:]))
		t.OrigRAX = int64(le.Uint64(desc[prRegOff+8*origRAXIdx:]))
		t.FSBase = le.Uint64(desc[prRegOff+8*fsBaseIdx:])
		t.GSBase = le.Uint64(desc[prRegOff+8*gsBaseIdx:])
		f.Threads = append(f.Threads, t)
	case ntPrpsinfo:
		if len(desc) < prpsinfoSize {
			return &FormatError{"NT_PRPSINFO", at, fmt.Sprintf("%d bytes, want %d", len(desc), prpsinfoSize)}
		}
		f.PID = int(int32(le.Uint32(desc[24:])))
		f.PPID = int(int32(le.Uint32(desc[28:])))
		f.Name = cstring(desc[40:56])
		f.Args = cstring(desc[56:136])
	case ntAuxv:
		for i := 0; i+16 <= len(desc); i += 16 {
			tag := le.Uint64(desc[i:])
			if tag == 0 { // AT_NULL
				break
			}
			f.Auxv = append(f.Auxv, AuxEntry{Tag: tag, Val: le.Uint64(desc[i+8:])})
		}
	case ntFile:
		return f.parseFileNote(desc, at)
	}
	return nil
}

// prstatusARM64 reads an arm64 NT_PRSTATUS. The system call a thread
// is in is not recorded (arm64 keeps no orig_x0 in the note): x8 holds
// its number and x0-x5 its arguments, unless x0 already holds its
// result; OrigRAX and RAX are -1.
func (f *File) prstatusARM64(desc []byte, at uint64) error {
	le := binary.LittleEndian
	if len(desc) < prstatusSizeARM64 {
		return &FormatError{"NT_PRSTATUS", at, fmt.Sprintf("%d bytes, want %d", len(desc), prstatusSizeARM64)}
	}
	t := Thread{
		Signal:  int(int16(le.Uint16(desc[12:]))),
		TID:     int(int32(le.Uint32(desc[32:]))),
		OrigRAX: -1, RAX: -1,
	}
	var words [34]uint64 // struct user_pt_regs
	for i := range words {
		words[i] = le.Uint64(desc[prRegOff+8*i:])
	}
	t.Regs = unwind.ARM64UserRegs(words[:])
	f.Threads = append(f.Threads, t)
	return nil
}

// parseFileNote reads NT_FILE: count, page size, count × (start, end,
// offset in pages), then count NUL-terminated paths.
func (f *File) parseFileNote(desc []byte, at uint64) error {
	le := binary.LittleEndian
	if len(desc) < 16 {
		return &FormatError{"NT_FILE", at, "truncated"}
	}
	count, page := le.Uint64(desc), le.Uint64(desc[8:])
	if count > uint64(len(desc)-16)/24 {
		return &FormatError{"NT_FILE", at, fmt.Sprintf("%d entries do not fit in %d bytes", count, len(desc))}
	}
	names := desc[16+24*count:]
	for i := range count {
		e := desc[16+24*i:]
		nul := bytes.IndexByte(names, 0)
		if nul < 0 {
			return &FormatError{"NT_FILE", at, fmt.Sprintf("%d paths for %d entries", i, count)}
		}
		f.Mappings = append(f.Mappings, Mapping{
			Start:  le.Uint64(e),
			End:    le.Uint64(e[8:]),
			Offset: le.Uint64(e[16:]) * page,
			Path:   string(names[:nul]),
		})
		names = names[nul+1:]
	}
	return nil
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
