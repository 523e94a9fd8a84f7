// A key's state in the in-process backend: its holders, window histories,
// cooldown and line of waiters, with the time passed in; nothing here
// reads a clock or blocks.

package throttle

import "time"

// keyState is one key of the in-process backend.
type keyState struct {
	holders  map[string]time.Time // lease id -> expiry
	windows  map[time.Duration]*history
	cooldown time.Time
	waiters  line[*waiter]
	timer    *time.Timer
}

// verdict is the answer of Memory.check.
type verdict struct {
	ok     bool
	reason Reason
	at     time.Time // when the refusing limit frees up; zero if unknown
	// members: for a request with Members, those without room
	members []string
}

// admit decides r's windows on ks at ns (nanoseconds since epoch): ok, or
// refused until the last of them opens.
func (ks *keyState) admit(r Request, ns int64, epoch time.Time) verdict {
	v := verdict{ok: true}
	for _, w := range r.Windows {
		h := ks.windows[w.Period]
		if h == nil {
			continue
		}
		h.prune(ns)
		if ok, at := h.admit(w.Limit, r.units()); !ok {
			v = verdict{reason: ReasonRate, at: latest(v.at, epoch.Add(time.Duration(at)))}
		}
	}
	return v
}

// count counts units at ns in each of ws.
func (ks *keyState) count(ws []Window, ns int64, units int) {
	for _, w := range ws {
		h := ks.windows[w.Period]
		if h == nil {
			h = &history{period: int64(w.Period), width: int64(w.Period) / BucketsPerWindow}
			ks.windows[w.Period] = h
		}
		h.add(ns, units)
	}
}

// purge drops the holders whose leases have expired at now, and returns
// the first expiry of the others (zero: none).
func (ks *keyState) purge(now time.Time) (next time.Time) {
	for id, exp := range ks.holders {
		if !now.Before(exp) {
			delete(ks.holders, id)
		} else if next.IsZero() || exp.Before(next) {
			next = exp
		}
	}
	return next
}

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// untake gives back everything a lease took: its slot and its window counts. Used
// when a grant raced with its waiter's cancellation, so the grant never started.
func (ks *keyState) untake(l Lease, r Request, epoch time.Time) {
	delete(ks.holders, l.ID)
	for _, w := range r.Windows {
		if h := ks.windows[w.Period]; h != nil {
			h.remove(int64(l.Granted.Sub(epoch)), r.units())
		}
	}
}

// err returns the refusal v of a request on key as a LimitError at now.
func (v verdict) err(key string, now time.Time) *LimitError {
	e := &LimitError{Key: key, Reason: v.reason, Members: v.members}
	if v.reason != ReasonConcurrency && v.at.After(now) {
		e.RetryAfter = v.at.Sub(now)
	}
	return e
}

// idle reports whether the key's state is all in its default, so it can go.
func (ks *keyState) idle(now, epoch time.Time) bool {
	if ks.waiters.len() > 0 || now.Before(ks.cooldown) || !ks.purge(now).IsZero() {
		return false
	}
	ns := int64(now.Sub(epoch))
	for _, h := range ks.windows {
		h.prune(ns)
		if len(h.buckets) > 0 {
			return false
		}
	}
	return true
}
