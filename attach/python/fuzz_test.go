package python

import (
	"testing"
	"time"
)

// FuzzRead reads an interpreter from random memory: it must return (an
// error or a bounded state) without panicking, hanging or allocating
// without bound. Input: a version selector byte, then the image, with
// _PyRuntime at its start. Seeds are the synthetic images of the tests.
func FuzzRead(f *testing.F) {
	seed := func(sel byte, build func(t testing.TB, m *image, runtime uint64)) {
		m := newImage(1 << 18)
		runtime := m.alloc(f, 1024)
		build(f, m, runtime)
		f.Add(append([]byte{sel}, m.data[:m.next-m.base]...))
	}
	seed(0, func(t testing.TB, m *image, runtime uint64) {
		l := layout311
		interp := m.alloc(t, 512)
		m.put64(runtime+l.runtimeInterpHead, interp)
		ts := m.buildThreads(t, &l, interp, twoThreads)
		m.put64(runtime+l.gil.off+gilHolderOff, ts[0])
		m.put32(runtime+l.gil.off+gilLockedOff, 1)
	})
	seed(1, func(t testing.TB, m *image, runtime uint64) {
		l := layout312
		interp := m.alloc(t, 4096)
		m.put64(runtime+l.runtimeInterpHead, interp)
		m.buildThreads(t, &l, interp, twoThreads)
		m.put64(interp+0x100, interp+0x800)
		m.put64(interp+0x800, 5000)
	})
	seed(2, func(t testing.TB, m *image, runtime uint64) {
		m.putBytes(runtime, debugTable(debug314, MakeVersion(3, 14, 0), debugValues))
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 {
			return
		}
		versions := []Version{MakeVersion(3, 11, 2), MakeVersion(3, 12, 0), MakeVersion(3, 13, 0)}
		v := versions[int(data[0])%len(versions)]
		m := &image{base: 0x7f0000100000, data: data[1:]}
		start := time.Now()
		r, err := NewReader(m, m.base+0x100, v)
		if err != nil {
			return
		}
		st, _ := r.Read()
		if time.Since(start) > 5*time.Second {
			t.Errorf("Read took %v", time.Since(start))
		}
		if st == nil {
			return
		}
		if len(st.Threads) > maxThreads {
			t.Errorf("%d threads", len(st.Threads))
		}
		for _, th := range st.Threads {
			if len(th.Frames) > maxFrames {
				t.Errorf("%d frames", len(th.Frames))
			}
			for _, fr := range th.Frames {
				if len(fr.File) > 4*maxStringChars || len(fr.Func) > 4*maxStringChars {
					t.Errorf("string of %d bytes", len(fr.File))
				}
			}
		}
	})
}
