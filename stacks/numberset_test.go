package stacks

import "testing"

// numberSet answers as a map of ints would, across its bits and its map.
func TestNumberSet(t *testing.T) {
	var s numberSet
	want := map[int]bool{}
	for _, n := range []int{1, 64, 63, 0, 1, 200_000, maxBitID - 1, maxBitID, 1 << 40, -3, 64, 1 << 40, 5, 200_000} {
		if got := s.add(n); got != want[n] {
			t.Fatalf("add(%d) = %v, want %v", n, got, want[n])
		}
		want[n] = true
	}
}
