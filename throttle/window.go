package throttle

import "time"

// history is the bucketed record of acquisitions for one window period.
// Bucket i covers [i*width, (i+1)*width) in nanoseconds since the backend's
// epoch, measured on the monotonic clock so that wall-clock steps change
// nothing.
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

// admit reports whether one more acquisition fits under limit at now (the
// history must be pruned at now), and if not, the earliest time it will fit.
func (h *history) admit(limit int) (ok bool, at int64) {
	n := h.count()
	if n < limit {
		return true, 0
	}
	for _, b := range h.buckets {
		n -= b.n
		if n < limit {
			// Once bucket b no longer counts: oldest(t) > b.idx.
			return false, (b.idx+1)*h.width + h.period
		}
	}
	return false, 0 // unreachable: n reaches 0 < limit
}

func (h *history) add(now int64) {
	idx := now / h.width
	if k := len(h.buckets); k > 0 && h.buckets[k-1].idx == idx {
		h.buckets[k-1].n++
		return
	}
	h.buckets = append(h.buckets, bucket{idx: idx, n: 1})
}

// remove takes back one acquisition made at the given time, if still recorded.
func (h *history) remove(at int64) {
	idx := at / h.width
	for i := range h.buckets {
		if h.buckets[i].idx == idx && h.buckets[i].n > 0 {
			h.buckets[i].n--
			return
		}
	}
}
