//go:build !amd64

package attach

import (
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach/goproc"
)

// goLive: a live Go program is read as OS threads on this host (goproc
// reads x86-64 registers; no arm64 machine here to test another).
const goLive = false

func goRegs(*unix.PtraceRegs) goproc.Regs { return goproc.Regs{} }
