package main

import (
	"os"
	"runtime/pprof"
)

// HANGDOC_CPUPROFILE=FILE writes a CPU profile of the whole run there, for
// `go tool pprof` (issue #13: the binary as `make bench` runs it, its
// collector settings and file reads included). Hidden: a developer's aid.
var cpuProfile *os.File

func init() {
	name := os.Getenv("HANGDOC_CPUPROFILE")
	if name == "" {
		return
	}
	f, err := os.Create(name)
	if err != nil {
		return
	}
	if pprof.StartCPUProfile(f) != nil {
		f.Close()
		return
	}
	cpuProfile = f
}

// stopCPUProfile ends the profile before hangdoc exits.
func stopCPUProfile() {
	if cpuProfile != nil {
		pprof.StopCPUProfile()
		cpuProfile.Close()
		cpuProfile = nil
	}
}
