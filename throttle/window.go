package throttle

import (
	"cmp"
	"slices"
)

// history is the bucketed record of acquisitions for one window period.
// Bucket i covers [i*width, (i+1)*width): for Memory in nanoseconds since
// the backend's epoch, measured on the monotonic clock so that wall-clock
// steps change nothing; for the Redis backend's ledger in unix ms of the
// server's clock, the buckets the scripts count in.
type history struct {
	period  int64
	width   int64
	buckets []bucket // ascending idx
}

type bucket struct {
	idx int64
	n   int
}

// byIdx orders buckets by index, for a binary search.
func byIdx(b bucket, idx int64) int { return cmp.Compare(b.idx, idx) }

// prune drops the buckets that no longer count at now: those before the
// one holding now-period, which counts whole so that every acquisition in
// (now-period, now] does.
func (h *history) prune(now int64) {
	if now >= h.period {
		i, _ := slices.BinarySearchFunc(h.buckets, (now-h.period)/h.width, byIdx)
		h.buckets = slices.Delete(h.buckets, 0, i)
	}
}

// count returns the units counted in the history.
func (h *history) count() int {
	n := 0
	for _, b := range h.buckets {
		n += b.n
	}
	return n
}

// admit reports whether an acquisition of units fits under limit at now
// (the history must be pruned at now), and if not, the earliest time it will
// fit. units must not exceed limit.
func (h *history) admit(limit, units int) (ok bool, at int64) {
	n := h.count()
	if n+units <= limit {
		return true, 0
	}
	for _, b := range h.buckets {
		n -= b.n
		if n+units <= limit {
			// Once bucket b no longer counts: now-period lies past it.
			return false, (b.idx+1)*h.width + h.period
		}
	}
	return false, 0 // unreachable: n reaches 0 and units <= limit
}

// add counts an acquisition of units at t, which is now or, for a history
// fed by another clock (the Redis backend's ledger), any time.
func (h *history) add(t int64, units int) {
	if i, found := slices.BinarySearchFunc(h.buckets, t/h.width, byIdx); found {
		h.buckets[i].n += units
	} else {
		h.buckets = slices.Insert(h.buckets, i, bucket{idx: t / h.width, n: units})
	}
}

// remove takes back an acquisition of units made at the given time, as far
// as it is still recorded.
func (h *history) remove(at int64, units int) {
	if i, found := slices.BinarySearchFunc(h.buckets, at/h.width, byIdx); found {
		h.buckets[i].n -= min(units, h.buckets[i].n)
	}
}
