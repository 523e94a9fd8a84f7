// Package window is the bucketed history of a rate window, which the
// in-process backend counts in and the Redis backend logs its grants in.
package window

import (
	"cmp"
	"slices"
)

// History is the bucketed record of acquisitions for one window period.
// Bucket i covers [i*width, (i+1)*width): for Memory in nanoseconds since
// the backend's epoch, measured on the monotonic clock so that wall-clock
// steps change nothing; for the Redis backend's ledger in unix ms of the
// server's clock, the buckets the scripts count in.
type History struct {
	Period  int64
	Width   int64
	Buckets []Bucket // ascending idx
}

// Bucket is one bucket of a History: its index and the units counted in it.
type Bucket struct {
	Idx int64
	N   int
}

// byIdx orders buckets by index, for a binary search.
func byIdx(b Bucket, idx int64) int { return cmp.Compare(b.Idx, idx) }

// Prune drops the buckets that no longer count at now: those before the
// one holding now-period, which counts whole so that every acquisition in
// (now-period, now] does.
func (h *History) Prune(now int64) {
	if now >= h.Period {
		i, _ := slices.BinarySearchFunc(h.Buckets, (now-h.Period)/h.Width, byIdx)
		h.Buckets = slices.Delete(h.Buckets, 0, i)
	}
}

// Count returns the units counted in the history.
func (h *History) Count() int {
	n := 0
	for _, b := range h.Buckets {
		n += b.N
	}
	return n
}

// Admit reports whether an acquisition of units fits under limit at now
// (the history must be pruned at now), and if not, the earliest time it will
// fit. units must not exceed limit.
func (h *History) Admit(limit, units int) (ok bool, at int64) {
	n := h.Count()
	if n+units <= limit {
		return true, 0
	}
	for _, b := range h.Buckets {
		n -= b.N
		if n+units <= limit {
			// Once bucket b no longer counts: now-period lies past it.
			return false, (b.Idx+1)*h.Width + h.Period
		}
	}
	return false, 0 // unreachable: n reaches 0 and units <= limit
}

// Add counts an acquisition of units at t, which is now or, for a history
// fed by another clock (the Redis backend's ledger), any time.
func (h *History) Add(t int64, units int) {
	if i, found := slices.BinarySearchFunc(h.Buckets, t/h.Width, byIdx); found {
		h.Buckets[i].N += units
	} else {
		h.Buckets = slices.Insert(h.Buckets, i, Bucket{Idx: t / h.Width, N: units})
	}
}

// Remove takes back an acquisition of units made at the given time, as far
// as it is still recorded.
func (h *History) Remove(at int64, units int) {
	if i, found := slices.BinarySearchFunc(h.Buckets, at/h.Width, byIdx); found {
		h.Buckets[i].N -= min(units, h.Buckets[i].N)
	}
}
