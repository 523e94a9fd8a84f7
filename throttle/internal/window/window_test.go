package window

import (
	"slices"
	"testing"
)

// A history keeps its buckets in order whatever order the acquisitions
// come in (the Redis backend's ledger learns of grants out of order: a
// block counts ahead, a grant from another process arrives late), and
// prunes, counts and refunds by them.
func TestHistoryOutOfOrder(t *testing.T) {
	t.Parallel()
	h := History{Period: 600, Width: 10}
	for _, a := range []struct {
		t     int64
		units int
	}{{1005, 1}, {1003, 2}, {1042, 4}, {1021, 8}, {1000, 16}, {1049, 32}} {
		h.Add(a.t, a.units)
	}
	want := []Bucket{{100, 19}, {102, 8}, {104, 36}}
	if !slices.Equal(h.Buckets, want) {
		t.Fatalf("buckets %v, want %v", h.Buckets, want)
	}
	h.Remove(1029, 3)
	h.Prune(1620) // oldest bucket counted at 1620: (1620-600)/10 = 102
	if want := []Bucket{{102, 5}, {104, 36}}; !slices.Equal(h.Buckets, want) {
		t.Fatalf("after a refund and a prune: %v, want %v", h.Buckets, want)
	}
	if n := h.Count(); n != 41 {
		t.Errorf("count %d, want 41", n)
	}
}
