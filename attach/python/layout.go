package python

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// layout is where the reader finds what it needs in one CPython version's
// structures. 3.11 and 3.12 come from tables written from their headers;
// 3.13 and later from the _Py_DebugOffsets the interpreter carries at the
// start of _PyRuntime.
type layout struct {
	runtimeInterpHead uint64 // _PyRuntime.interpreters.head

	interpNext, interpThreadsHead uint64

	gil gilPlace

	tstateNext, tstateThreadID, tstateNativeID uint64
	// Before 3.13 the current frame is tstate->cframe->current_frame;
	// from 3.13 on tstate->current_frame (tstateCFrame is then none).
	tstateCFrame       uint64
	cframeCurrentFrame uint64
	tstateCurrentFrame uint64

	frameCode, framePrevious, frameInstr, frameOwner uint64
	frameIsEntry                                     uint64 // 3.11 only: is_entry
	// ownerCStack and ownerInterpreter are the owners of frames that run
	// no Python code: the shim each _PyEval_EvalFrameDefault call pushes
	// first (FRAME_OWNED_BY_CSTACK, 3, in 3.12 and 3.13; 3.14 numbers
	// FRAME_OWNED_BY_INTERPRETER 3 and FRAME_OWNED_BY_CSTACK 4 and its
	// entry shim is the former). noOwner where the version has none and
	// marks entries with is_entry (3.11).
	ownerCStack, ownerInterpreter uint8
	// taggedCode says f_executable is a _PyStackRef whose low bits are
	// tags (3.14).
	taggedCode bool

	codeFilename, codeName, codeQualname, codeFirstLineno, codeLinetable, codeAdaptive uint64

	unicodeState, unicodeLength, asciiSize, compactSize uint64
	bytesSize, bytesData                                uint64
}

// none marks an offset a version does not have.
const none = ^uint64(0)

// noOwner is an owner value no frame has.
const noOwner = 0xff

// gilPlace says where the GIL's locked flag and holder are.
type gilPlace struct {
	kind gilKind
	// off is the GIL structure's offset in _PyRuntime (gilInRuntime),
	// the offset of the pointer to it in the interpreter (gilPointer),
	// or 0 with locked and holder relative to the interpreter
	// (gilInInterp).
	off uint64
	// own is, in 3.12, the offset of interp->_gil: the GIL structure of
	// an interpreter that has its own (the main one always does), which
	// interp->ceval.gil points at; other interpreters point at the main
	// interpreter's.
	own            uint64
	locked, holder uint64 // offsets inside the GIL structure (or interp)
	// cond tells a thread waiting in take_gil by the futex it sleeps on.
	cond uint64
}

type gilKind int

const (
	gilUnknown   gilKind = iota
	gilInRuntime         // 3.11: _PyRuntime.ceval.gil
	gilPointer           // 3.12: *interp->ceval.gil
	gilInInterp          // 3.13+: interp->_gil, from the debug offsets
)

// GIL structure (struct _gil_runtime_state) fields from 3.11 to 3.14:
// interval, last_holder, locked, switch_number, cond, mutex.
const (
	gilHolderOff = 8
	gilLockedOff = 16
	gilCondOff   = 32
	condSize     = 48 // pthread_cond_t
)

// layout311 is CPython 3.11's layout (x86-64, Linux). TestLayoutHeaders
// compares every offset with offsetof() compiled against each installed
// 3.11's headers (Debian's 3.11.2, pyenv's 3.11.7).
var layout311 = layout{
	runtimeInterpHead: 40,
	interpNext:        0, interpThreadsHead: 16,
	gil:        gilPlace{kind: gilInRuntime, off: 360, locked: gilLockedOff, holder: gilHolderOff, cond: gilCondOff},
	tstateNext: 8, tstateThreadID: 152, tstateNativeID: 160,
	tstateCFrame: 56, cframeCurrentFrame: 8, tstateCurrentFrame: none,
	frameCode: 32, framePrevious: 48, frameInstr: 56, frameOwner: 69, frameIsEntry: 68,
	ownerCStack: noOwner, ownerInterpreter: noOwner,
	codeFilename: 112, codeName: 120, codeQualname: 128, codeFirstLineno: 72, codeLinetable: 136, codeAdaptive: 184,
	unicodeState: 32, unicodeLength: 16, asciiSize: 48, compactSize: 72,
	bytesSize: 16, bytesData: 32,
}

// layout312 is CPython 3.12's layout (x86-64, Linux), from the 3.12.0
// headers (Include/cpython/pystate.h, code.h, internal/pycore_frame.h,
// pycore_interp.h, pycore_runtime.h): the wstr fields are gone from
// strings, _PyCFrame lost use_tracing, frames carry an owner
// FRAME_OWNED_BY_CSTACK (3) for the shim that starts each evaluator call,
// and the GIL moved behind interp->ceval.gil (interp+384 in 3.12.0 and
// 3.12.1: next, ids, threads, runtime, _finalizing, a 240-byte gc state,
// sysdict, builtins, then ceval {eval_breaker, gil_drop_request,
// recursion_limit, gil}), which points at interp->_gil (interp+1040).
// TestLayoutHeaders compares it with offsetof() of every 3.12 whose
// headers are installed. The reader checks what that pointer points at
// and searches the interpreter for it when the check fails
// (findGIL312).
var layout312 = layout{
	runtimeInterpHead: 40,
	interpNext:        0, interpThreadsHead: 72,
	gil:        gilPlace{kind: gilPointer, off: 384, own: 1040, locked: gilLockedOff, holder: gilHolderOff, cond: gilCondOff},
	tstateNext: 8, tstateThreadID: 136, tstateNativeID: 144,
	tstateCFrame: 56, cframeCurrentFrame: 0, tstateCurrentFrame: none,
	frameCode: 0, framePrevious: 8, frameInstr: 56, frameOwner: 70, frameIsEntry: none,
	ownerCStack: 3, ownerInterpreter: noOwner,
	codeFilename: 112, codeName: 120, codeQualname: 128, codeFirstLineno: 68, codeLinetable: 136, codeAdaptive: 192,
	unicodeState: 32, unicodeLength: 16, asciiSize: 40, compactSize: 56,
	bytesSize: 16, bytesData: 32,
}

// DebugCookie starts _PyRuntime from CPython 3.13 on.
const DebugCookie = "xdebugpy"

// maxDebugOffsets is how much of _PyRuntime is read for the table; it is
// far smaller in every version so far.
const maxDebugOffsets = 1024

// debugFields names, in order, the uint64 fields of _Py_DebugOffsets up
// to the last one the reader uses, per layout of that struct. The struct
// is not stable across minor versions: 3.14 inserted fields in the
// interpreter, frame and code sections. Versions after 3.14 are read with
// 3.14's order and checked (checkDebug) before use.
var (
	debug313 = []string{
		"cookie", "version", "free_threaded",
		"rt.size", "rt.finalizing", "rt.interpreters_head",
		"is.size", "is.id", "is.next", "is.threads_head", "is.gc", "is.imports_modules", "is.sysdict", "is.builtins",
		"is.ceval_gil", "is.gil_runtime_state", "is.gil_runtime_state_enabled", "is.gil_runtime_state_locked", "is.gil_runtime_state_holder",
		"ts.size", "ts.prev", "ts.next", "ts.interp", "ts.current_frame", "ts.thread_id", "ts.native_thread_id", "ts.datastack_chunk", "ts.status",
		"fr.size", "fr.previous", "fr.executable", "fr.instr_ptr", "fr.localsplus", "fr.owner",
		"co.size", "co.filename", "co.name", "co.qualname", "co.linetable", "co.firstlineno", "co.argcount", "co.localsplusnames", "co.localspluskinds", "co.co_code_adaptive",
		"ob.size", "ob.ob_type",
		"ty.size", "ty.tp_name", "ty.tp_repr", "ty.tp_flags",
		"tu.size", "tu.ob_item", "tu.ob_size",
		"li.size", "li.ob_item", "li.ob_size",
		"di.size", "di.ma_keys", "di.ma_values",
		"fl.size", "fl.ob_fval",
		"lo.size", "lo.lv_tag", "lo.ob_digit",
		"by.size", "by.ob_size", "by.ob_sval",
		"un.size", "un.state", "un.length", "un.asciiobject_size",
	}
	debug314 = []string{
		"cookie", "version", "free_threaded",
		"rt.size", "rt.finalizing", "rt.interpreters_head",
		"is.size", "is.id", "is.next", "is.threads_head", "is.threads_main", "is.gc", "is.imports_modules", "is.sysdict", "is.builtins",
		"is.ceval_gil", "is.gil_runtime_state", "is.gil_runtime_state_enabled", "is.gil_runtime_state_locked", "is.gil_runtime_state_holder",
		"is.code_object_generation", "is.tlbc_generation",
		"ts.size", "ts.prev", "ts.next", "ts.interp", "ts.current_frame", "ts.thread_id", "ts.native_thread_id", "ts.datastack_chunk", "ts.status",
		"fr.size", "fr.previous", "fr.executable", "fr.instr_ptr", "fr.localsplus", "fr.owner", "fr.stackpointer", "fr.tlbc_index",
		"co.size", "co.filename", "co.name", "co.qualname", "co.linetable", "co.firstlineno", "co.argcount", "co.localsplusnames", "co.localspluskinds", "co.co_code_adaptive", "co.co_tlbc",
		"ob.size", "ob.ob_type",
		"ty.size", "ty.tp_name", "ty.tp_repr", "ty.tp_flags",
		"tu.size", "tu.ob_item", "tu.ob_size",
		"li.size", "li.ob_item", "li.ob_size",
		"se.size", "se.used", "se.table", "se.mask",
		"di.size", "di.ma_keys", "di.ma_values",
		"fl.size", "fl.ob_fval",
		"lo.size", "lo.lv_tag", "lo.ob_digit",
		"by.size", "by.ob_size", "by.ob_sval",
		"un.size", "un.state", "un.length", "un.asciiobject_size",
	}
)

// debugFieldNames returns the field order for a version (hex).
func debugFieldNames(hex uint64) []string {
	if Version(hex).Minor() == 13 && Version(hex).Major() == 3 {
		return debug313
	}
	return debug314
}

// parseDebugOffsets reads the _Py_DebugOffsets table at the start of a
// 3.13+ _PyRuntime image into a layout. It checks the table against
// itself (every field offset inside its structure's size) so that a
// future reordering fails with an error instead of reading garbage.
func parseDebugOffsets(raw []byte) (layout, Version, error) {
	if len(raw) < 16 || !bytes.Equal(raw[:8], []byte(DebugCookie)) {
		return layout{}, 0, fmt.Errorf("no %q cookie at the start of _PyRuntime", DebugCookie)
	}
	hex := binary.LittleEndian.Uint64(raw[8:])
	v := Version(hex)
	if v.Major() != 3 || v.Minor() < 13 {
		return layout{}, v, fmt.Errorf("_Py_DebugOffsets: version %#x is not 3.13 or later", hex)
	}
	names := debugFieldNames(hex)
	if len(names)*8 > len(raw) {
		return layout{}, v, fmt.Errorf("_Py_DebugOffsets: %d bytes read, %d needed", len(raw), len(names)*8)
	}
	f := make(map[string]uint64, len(names))
	for i, n := range names {
		f[n] = binary.LittleEndian.Uint64(raw[i*8:])
	}
	if f["free_threaded"] != 0 {
		return layout{}, v, fmt.Errorf("CPython %s is a free-threaded build: it has no GIL and its frames are not read yet", v)
	}
	if err := checkDebug(f); err != nil {
		return layout{}, v, fmt.Errorf("_Py_DebugOffsets of CPython %s: %w", v, err)
	}
	l := layout{
		runtimeInterpHead: f["rt.interpreters_head"],
		interpNext:        f["is.next"], interpThreadsHead: f["is.threads_head"],
		gil: gilPlace{kind: gilInInterp, locked: f["is.gil_runtime_state_locked"], holder: f["is.gil_runtime_state_holder"],
			cond: f["is.gil_runtime_state"] + gilCondOff},
		tstateNext: f["ts.next"], tstateThreadID: f["ts.thread_id"], tstateNativeID: f["ts.native_thread_id"],
		tstateCFrame: none, tstateCurrentFrame: f["ts.current_frame"],
		frameCode: f["fr.executable"], framePrevious: f["fr.previous"], frameInstr: f["fr.instr_ptr"], frameOwner: f["fr.owner"],
		frameIsEntry: none, ownerCStack: 3, ownerInterpreter: 4, // 3.14: INTERPRETER 3, CSTACK 4
		taggedCode:   v.Minor() >= 14,
		codeFilename: f["co.filename"], codeName: f["co.name"], codeQualname: f["co.qualname"],
		codeFirstLineno: f["co.firstlineno"], codeLinetable: f["co.linetable"], codeAdaptive: f["co.co_code_adaptive"],
		unicodeState: f["un.state"], unicodeLength: f["un.length"], asciiSize: f["un.asciiobject_size"],
		compactSize: f["un.asciiobject_size"] + 16, // utf8_length, utf8
		bytesSize:   f["by.ob_size"], bytesData: f["by.ob_sval"],
	}
	if v.Minor() < 14 {
		l.ownerInterpreter = noOwner
	}
	return l, v, nil
}

// checkDebug checks that each offset the reader uses lies inside the size
// its section gives, and that sizes are plausible.
func checkDebug(f map[string]uint64) error {
	sections := map[string][]string{
		"rt": {"interpreters_head"},
		"is": {"next", "threads_head", "gil_runtime_state_locked", "gil_runtime_state_holder"},
		"ts": {"next", "current_frame", "thread_id", "native_thread_id"},
		"fr": {"previous", "executable", "instr_ptr", "owner"},
		"co": {"filename", "name", "qualname", "linetable", "firstlineno", "co_code_adaptive"},
		"by": {"ob_size", "ob_sval"},
		"un": {"state", "length", "asciiobject_size"},
	}
	for _, sec := range []string{"rt", "is", "ts", "fr", "co", "by", "un"} {
		size := f[sec+".size"]
		if size == 0 || size > 1<<24 {
			return fmt.Errorf("%s.size %d is implausible (the table's layout is not the one expected)", sec, size)
		}
		for _, name := range sections[sec] {
			off := f[sec+"."+name]
			if off >= size {
				return fmt.Errorf("%s.%s = %d lies outside its structure (size %d)", sec, name, off, size)
			}
		}
	}
	return nil
}
