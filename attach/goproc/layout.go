package goproc

import (
	"sort"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// layout is where a Go release's runtime keeps what a goroutine read
// needs, for binaries without DWARF: byte offsets in its structs (amd64),
// as py-spy keeps CPython's by version. Each release's row is checked
// against the DWARF of a binary that release's toolchain built
// (TestLayoutMatchesDWARF); a release without a row is not guessed at.
type layout struct {
	// runtime.g
	gSize                                   int64
	gStackLo, gStackHi, gM                  int64
	gSchedSP, gSchedPC, gSchedBP            int64
	gSyscallSP, gSyscallPC                  int64
	gStatus, gGoid, gWaitsince, gWaitreason int64
	gLockedm, gParentGoid, gGopc, gStartpc  int64 // gParentGoid -1: none (before Go 1.21)
	gAncestors, gWaiting                    int64
	// runtime.m
	mProcid, mCurg int64
	// runtime.sudog; elem and c are the words holding the address (Go
	// 1.26 wraps them in maybeTraceablePtr{vp, vu}: vu)
	sG, sNext, sPrev, sElem, sWaitlink, sC int64
	// runtime.moduledata
	mdText, mdBss, mdEbss, mdGofunc int64
	// runtime._func and runtime.inlinedCall
	funcSize                                 int64
	inlSize, inlFuncID, inlName, inlParentPC int64
	// semaRoot.treap, and the stride of runtime.semtable's entries
	semTreap, semStride int64
}

var layouts = map[string]*layout{
	"go1.19": {
		gSize: 392, gStackLo: 0, gStackHi: 8, gM: 48,
		gSchedSP: 56, gSchedPC: 64, gSchedBP: 56 + 48,
		gSyscallSP: 112, gSyscallPC: 120,
		gStatus: 144, gGoid: 152, gWaitsince: 168, gWaitreason: 176,
		gLockedm: 232, gParentGoid: -1, gGopc: 296, gStartpc: 312,
		gAncestors: 304, gWaiting: 328,
		mProcid: 72, mCurg: 192,
		sG: 0, sNext: 8, sPrev: 16, sElem: 24, sWaitlink: 64, sC: 80,
		mdText: 176, mdBss: 224, mdEbss: 232, mdGofunc: 304,
		funcSize: 40,
		inlSize:  20, inlFuncID: 2, inlName: 12, inlParentPC: 16,
		semTreap: 8, semStride: 64,
	},
	"go1.26": {
		gSize: 456, gStackLo: 0, gStackHi: 8, gM: 48,
		gSchedSP: 56, gSchedPC: 64, gSchedBP: 56 + 40,
		gSyscallSP: 104, gSyscallPC: 112,
		gStatus: 144, gGoid: 152, gWaitsince: 168, gWaitreason: 176,
		gLockedm: 208, gParentGoid: 280, gGopc: 288, gStartpc: 304,
		gAncestors: 296, gWaiting: 320,
		mProcid: 64, mCurg: 184,
		sG: 0, sNext: 8, sPrev: 16, sElem: 24 + 8, sWaitlink: 72, sC: 88 + 8,
		mdText: 176, mdBss: 224, mdEbss: 232, mdGofunc: 320,
		funcSize: 44,
		inlSize:  16, inlFuncID: 0, inlName: 4, inlParentPC: 8,
		semTreap: 8, semStride: 64,
	},
}

// release is "go1.26" of a build info's "go1.26.8" (or "go1.26rc1",
// "go1.26.8 X:nocoverageredesign"); "" when it is not a Go release.
func release(version string) string {
	return releaseRE.FindString(version)
}

var releaseRE = lazyre.New(`^go1\.\d+`)

// layoutFor is the layout of the runtime of a Go version.
func layoutFor(version string) (*layout, bool) {
	l, ok := layouts[release(version)]
	return l, ok && runtimeStrings[release(version)].status != nil
}

// knownReleases lists the releases with a layout, for messages.
func knownReleases() string {
	var rs []string
	for r := range layouts {
		rs = append(rs, strings.TrimPrefix(r, "go"))
	}
	sort.Strings(rs)
	return strings.Join(rs, ", ")
}
