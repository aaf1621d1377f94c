package module

import (
	"debug/elf"
	"encoding/binary"
)

// pltSymbols names the PLT stubs of an x86-64 file ("pthread_mutex_lock@plt",
// as gdb and objdump name them): no symbol table covers them, and a
// thread caught in one (or a frame whose return address is in one, after a
// tail call) would be "??". Each stub jumps through a GOT slot, jmp
// *disp(%rip); the slot's relocation (.rela.plt's JUMP_SLOT, or for
// .plt.got .rela.dyn's GLOB_DAT) names the function. The stubs are
// decoded rather than counted, so that .plt, .plt.sec (IBT) and .plt.got
// are read alike.
func pltSymbols(ef *elf.File) []Symbol {
	if ef.Machine != elf.EM_X86_64 || ef.Class != elf.ELFCLASS64 {
		return nil
	}
	dyn, err := ef.DynamicSymbols()
	if err != nil {
		return nil
	}
	slots := map[uint64]string{} // GOT slot address → function
	for _, name := range []string{".rela.plt", ".rela.dyn"} {
		s := ef.Section(name)
		if s == nil || s.Type != elf.SHT_RELA {
			continue
		}
		data, err := sectionData(s)
		if err != nil {
			continue
		}
		for ; len(data) >= 24; data = data[24:] {
			off, info := ef.ByteOrder.Uint64(data), ef.ByteOrder.Uint64(data[8:])
			typ, sym := elf.R_X86_64(info&0xffffffff), info>>32
			if (typ != elf.R_X86_64_JMP_SLOT && typ != elf.R_X86_64_GLOB_DAT) || sym == 0 || sym > uint64(len(dyn)) {
				continue
			}
			if n := dyn[sym-1].Name; n != "" {
				slots[off] = n
			}
		}
	}
	if len(slots) == 0 {
		return nil
	}
	var out []Symbol
	for _, name := range []string{".plt", ".plt.sec", ".plt.got"} {
		s := ef.Section(name)
		if s == nil || s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		data, err := sectionData(s)
		if err != nil {
			continue
		}
		size := uint64(16)
		if s.Entsize == 8 || name == ".plt.got" && s.Entsize != 16 {
			size = 8
		}
		for at := uint64(0); at+size <= uint64(len(data)); at += size {
			slot, ok := jmpSlot(data[at:at+size], s.Addr+at)
			if !ok {
				continue
			}
			if fn, ok := slots[slot]; ok {
				out = append(out, Symbol{Name: fn + "@plt", Value: s.Addr + at, Size: size, Func: true,
					end: s.Addr + at + size, rank: 3 << 8})
			}
		}
	}
	return out
}

// jmpSlot finds the jmp *disp32(%rip) of a PLT stub at addr, after an
// optional endbr64 and bnd prefix, and returns the address it loads.
func jmpSlot(stub []byte, addr uint64) (uint64, bool) {
	i := 0
	if len(stub) >= 4 && string(stub[:4]) == "\xf3\x0f\x1e\xfa" { // endbr64
		i = 4
	}
	if i < len(stub) && stub[i] == 0xf2 { // bnd
		i++
	}
	if i+6 > len(stub) || stub[i] != 0xff || stub[i+1] != 0x25 {
		return 0, false
	}
	disp := int32(binary.LittleEndian.Uint32(stub[i+2:]))
	return addr + uint64(i+6) + uint64(int64(disp)), true
}
