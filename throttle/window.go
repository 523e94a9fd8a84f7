package throttle

import (
	"cmp"
	"slices"
	"time"
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

func newHistory(period time.Duration) *history {
	return &history{period: int64(period), width: int64(period) / BucketsPerWindow}
}

// oldest is the first bucket index that still counts at now: the bucket holding
// now-period, counted whole, so that every acquisition in (now-period, now] is.
func (h *history) oldest(now int64) int64 {
	if now < h.period {
		return -1 // every bucket counts
	}
	return (now - h.period) / h.width
}

func (h *history) prune(now int64) {
	lo := h.oldest(now)
	i := 0
	for i < len(h.buckets) && h.buckets[i].idx < lo {
		i++
	}
	if i > 0 {
		h.buckets = append(h.buckets[:0], h.buckets[i:]...)
	}
}

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
			// Once bucket b no longer counts: oldest(t) > b.idx.
			return false, (b.idx+1)*h.width + h.period
		}
	}
	return false, 0 // unreachable: n reaches 0 and units <= limit
}

// add counts an acquisition of units at t, which is now or, for a history
// fed by another clock (the Redis backend's ledger), any time.
func (h *history) add(t int64, units int) {
	idx := t / h.width
	if k := len(h.buckets); k == 0 || h.buckets[k-1].idx < idx {
		h.buckets = append(h.buckets, bucket{idx: idx, n: units})
		return
	}
	i, found := slices.BinarySearchFunc(h.buckets, idx, func(b bucket, t int64) int { return cmp.Compare(b.idx, t) })
	if found {
		h.buckets[i].n += units
	} else {
		h.buckets = slices.Insert(h.buckets, i, bucket{idx: idx, n: units})
	}
}

// remove takes back an acquisition of units made at the given time, as far
// as it is still recorded.
func (h *history) remove(at int64, units int) {
	idx := at / h.width
	for i := range h.buckets {
		if h.buckets[i].idx == idx && h.buckets[i].n > 0 {
			h.buckets[i].n -= min(units, h.buckets[i].n)
			return
		}
	}
}
