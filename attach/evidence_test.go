package attach

import (
	"encoding/binary"
	"fmt"
	"testing"
)

func TestLockFrameNames(t *testing.T) {
	for _, fn := range []string{"pthread_mutex_lock", "___pthread_mutex_lock", "__pthread_mutex_lock_full", "__lll_lock_wait", "std::mutex::lock()", "pthread_mutex_timedlock"} {
		if !isMutexLock(fn) {
			t.Errorf("isMutexLock(%q) = false", fn)
		}
	}
	for _, fn := range []string{"__lll_lock_wait_private", "pthread_cond_wait", "malloc", ""} {
		if isMutexLock(fn) {
			t.Errorf("isMutexLock(%q) = true", fn)
		}
	}
	if !isJoin("__pthread_clockjoin_ex") || !isJoin("std::thread::join()") || isJoin("pthread_create") {
		t.Error("isJoin")
	}
}

// bytesAt is memory holding b at base.
type bytesAt struct {
	base uint64
	b    []byte
}

func (m bytesAt) ReadAt(p []byte, addr uint64) (int, error) {
	if addr < m.base || addr-m.base >= uint64(len(m.b)) {
		return 0, fmt.Errorf("unreadable at %#x", addr)
	}
	return copy(p, m.b[addr-m.base:]), nil
}

// musl's pthread_mutex_t: _m_type at +0, the futex word _m_lock at +4
// (values as musl 1.2.3 writes them, read from live musl patients).
func TestMuslMutex(t *testing.T) {
	for _, c := range []struct {
		typ, lock   uint32
		owner       int
		kind        uint32
		description string
	}{
		{0, 0x80000010, 0, 0, "default: EBUSY and the waiters bit, no owner"},
		{2, 0x80000000 | 4711, 4711, 2, "error-checking: owner tid"},
		{1 | 4, 0x40000000 | 4711, 4711, 1 | 16, "recursive robust, owner died"},
		{8 | 128, 0x80000000 | 99, 99, 32 | 128, "priority-inheritance, process-shared"},
	} {
		var b [12]byte
		binary.LittleEndian.PutUint32(b[0:], c.typ)
		binary.LittleEndian.PutUint32(b[4:], c.lock)
		m := muslMutex(bytesAt{0x1000, b[:]}, 0x1004, c.lock)
		if m == nil || m.Addr != 0x1000 || m.Owner != c.owner || m.Kind != c.kind || m.Lock != c.lock {
			t.Errorf("%s: muslMutex = %+v, want addr 0x1000, owner %d, kind %d", c.description, m, c.owner, c.kind)
		}
	}
}
