package attach

import (
	"encoding/binary"
	"os"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/attach/module"
	"github.com/hangdoc/hangdoc/attach/unwind"
	"github.com/hangdoc/hangdoc/stacks"
)

// lockEvidence adds what the futex word and the lock around it say:
// the futex value, and for a pthread mutex its owner, lock word and kind;
// for pthread_join, the thread joined. It reads the target's memory with
// process_vm_readv and never stops anything.
func (tg *target) lockEvidence(w *stacks.Wait, stack []stacks.Frame) {
	lockEvidence(liveMemory(tg.pid), tg.space, tg.libc, w, stack)
}

// dataSymbols names the object at an address ("server_lock").
type dataSymbols interface {
	DataSymbol(addr uint64) string
}

// lockEvidence reads the futex word and the lock around it from mem (a
// live process's memory or a core's), laid out as lc lays it out, and
// names the lock through syms: live attaches and core files share it.
func lockEvidence(mem unwind.Memory, syms dataSymbols, lc libc, w *stacks.Wait, stack []stacks.Frame) {
	if w == nil || w.Syscall != "futex" || w.Addr == 0 {
		return
	}
	var word [4]byte
	if n, _ := mem.ReadAt(word[:], w.Addr); n < 4 {
		return
	}
	v := binary.LittleEndian.Uint32(word[:])
	w.Value = &v
	switch {
	case inFrames(stack, 8, isJoin) && lc == musl:
		// musl's pthread_join waits on the joined thread's detach_state,
		// 8 bytes past its tid in struct pthread.
		if tid, ok := readInt32(mem, w.Addr-8); ok && tid > 0 {
			w.JoinTid = int(tid)
		}
	case inFrames(stack, 8, isJoin):
		// glibc's pthread_join waits on the joined thread's tid field,
		// which holds that tid until the thread exits.
		w.JoinTid = int(v)
	case inFrames(stack, 8, isMutexLock):
		var m *stacks.Mutex
		if lc == musl {
			m = muslMutex(mem, w.Addr, v)
		} else {
			m = glibcMutex(mem, w, v)
		}
		if m != nil {
			m.Symbol = syms.DataSymbol(m.Addr)
			w.Mutex = m
		}
	}
}

// glibcMutex reads a glibc pthread_mutex_t, whose futex word __lock is
// its first field: __owner at +8, __kind at +16.
func glibcMutex(mem unwind.Memory, w *stacks.Wait, v uint32) *stacks.Mutex {
	var b [24]byte
	if n, _ := mem.ReadAt(b[:], w.Addr); n < len(b) {
		return nil
	}
	m := &stacks.Mutex{
		Addr:  w.Addr,
		Lock:  v,
		Owner: int(int32(binary.LittleEndian.Uint32(b[8:12]))),
		Kind:  binary.LittleEndian.Uint32(b[16:20]),
	}
	if strings.HasPrefix(w.Op, "FUTEX_LOCK_PI") && m.Owner == 0 {
		// A PI mutex keeps its owner in the lock word itself.
		m.Owner = int(v & 0x3fffffff)
	}
	return m
}

// muslMutex reads a musl pthread_mutex_t, whose futex word _m_lock is
// at +4 after _m_type (src/internal/pthread_impl.h). A default mutex
// locks with the bare value EBUSY (16), plus the waiters bit 31: it has
// no owner. Every other type (recursive 1, error-checking 2, robust 4,
// priority-inheritance 8) stores the owner's tid in bits 0-29, bit 30
// marking an owner that died. The type is given in glibc's __kind bits,
// which the heuristics read.
func muslMutex(mem unwind.Memory, futex uint64, v uint32) *stacks.Mutex {
	typ, ok := readInt32(mem, futex-4)
	if !ok {
		return nil
	}
	m := &stacks.Mutex{Addr: futex - 4, Lock: v, Kind: uint32(typ) & 3}
	for _, b := range []struct{ musl, glibc uint32 }{{4, 16}, {8, 32}, {128, 128}} {
		if uint32(typ)&b.musl != 0 {
			m.Kind |= b.glibc
		}
	}
	if typ&15 != 0 {
		m.Owner = int(v & 0x3fffffff)
	}
	return m
}

func readInt32(mem unwind.Memory, addr uint64) (int32, bool) {
	var b [4]byte
	if n, _ := mem.ReadAt(b[:], addr); n < len(b) {
		return 0, false
	}
	return int32(binary.LittleEndian.Uint32(b[:])), true
}

// isMutexLock matches the frames of a lock whose holder glibc's
// pthread_mutex_t records (the vocabulary's owner field says which:
// pthread mutexes, std::mutex and its recursive kin); the private
// low-level lock of malloc or stdio (__lll_lock_wait_private) is a bare
// int, not a mutex, and is left out.
func isMutexLock(fn string) bool {
	r := stacks.VocabularyInForce().Lookup(fn)
	return r != nil && r.Role == stacks.RoleAcquire && r.Owner == stacks.OwnerPthreadMutex
}

// isJoin matches the frames of a thread join.
func isJoin(fn string) bool {
	r := stacks.VocabularyInForce().Lookup(fn)
	return r != nil && r.Role == stacks.RoleJoin
}

// inFrames says whether one of the n innermost frames matches.
func inFrames(stack []stacks.Frame, n int, match func(string) bool) bool {
	for i, f := range stack {
		if i == n {
			break
		}
		if match(f.Func) {
			return true
		}
	}
	return false
}

// fdTarget says what a file descriptor is: a path, "pipe:[inode]", or
// for a socket its addresses ("socket:[inode] tcp 127.0.0.1:5000 ->
// 127.0.0.1:41234").
func (tg *target) fdTarget(fd int) string {
	link, err := os.Readlink(procPath(tg.pid, "fd", strconv.Itoa(fd)))
	if err != nil {
		return ""
	}
	ino, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return link
	}
	ino = strings.TrimSuffix(ino, "]")
	addrs, seen := tg.sockets[ino]
	if !seen {
		addrs = socketAddrs(tg.pid, ino)
		if tg.sockets == nil {
			tg.sockets = map[string]string{}
		}
		tg.sockets[ino] = addrs
	}
	if addrs != "" {
		return link + " " + addrs
	}
	return link
}

// lineage fills in the process's children and, for a child that forked
// without exec, what it inherited from its parent.
func (tg *target) lineage() {
	tg.proc.Children = Children(tg.pid)
	parent := tg.stat.PPid
	if parent <= 1 || !forkedWithoutExec(tg.pid, parent) {
		return
	}
	fork := &stacks.Fork{ParentPid: parent}
	fork.ParentThreads, _ = listTasks(parent)
	if maps, err := readMaps(parent); err == nil {
		seen := map[string]bool{}
		for _, m := range maps {
			if strings.HasPrefix(m.Path, "/") && !seen[m.Path] {
				seen[m.Path] = true
				fork.ParentModules = append(fork.ParentModules, m.Path)
			}
		}
	}
	tg.proc.Fork = fork
}

// forkedWithoutExec: a child that never exec'd runs the parent's
// executable with the parent's stack and binary at the parent's
// addresses; an exec, even of the same binary, draws new random ones.
// (With randomisation off, `setarch -R`, a re-exec looks like a fork.)
func forkedWithoutExec(pid, parent int) bool {
	exe, err1 := os.Stat(procPath(pid, "exe"))
	pexe, err2 := os.Stat(procPath(parent, "exe"))
	if err1 != nil || err2 != nil || !os.SameFile(exe, pexe) {
		return false
	}
	mine, err1 := readMaps(pid)
	theirs, err2 := readMaps(parent)
	if err1 != nil || err2 != nil {
		return false
	}
	start := func(ms []module.Mapping, path string) uint64 {
		for _, m := range ms {
			if m.Path == path {
				return m.Start
			}
		}
		return 0
	}
	for _, p := range []string{"[stack]", mainPath(mine)} {
		if a := start(mine, p); a == 0 || a != start(theirs, p) {
			return false
		}
	}
	return true
}

// mainPath is the path of the first file mapping: the executable.
func mainPath(ms []module.Mapping) string {
	for _, m := range ms {
		if strings.HasPrefix(m.Path, "/") {
			return m.Path
		}
	}
	return ""
}
