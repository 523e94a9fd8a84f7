package throttle

import (
	"cmp"
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/wecomkit/wecom/throttle/internal/window"
)

// Memory is the in-process Backend: limits hold among the goroutines of one
// process that share the *Memory. It starts no goroutine; a released slot is
// handed to the next waiter inside Release, and a timer (armed only while
// someone waits) wakes the head of a queue when a window opens, a cooldown ends
// or an unreleased lease expires.
//
// Waiters on one key are served strictly in arrival order. The zero value is not
// usable; call NewMemory. A Memory is safe for concurrent use.
type Memory struct {
	epoch     time.Time // rate windows count monotonic time since epoch
	mu        sync.Mutex
	keys      map[string]*keyState
	seq       uint64
	nextSweep time.Time
	learned   map[string]Learned // by key; guarded by mu
	members   MemberLines        // the waiters of requests with Members
}

// NewMemory returns an empty in-process backend.
func NewMemory() *Memory {
	return &Memory{keys: make(map[string]*keyState), learned: make(map[string]Learned), epoch: time.Now()}
}

// keyState is one key of the in-process backend.
type keyState struct {
	holders  map[string]time.Time // lease id -> expiry
	windows  map[time.Duration]*window.History
	cooldown time.Time
	waiters  Line[*Waiter]
	timer    *time.Timer
}

// state returns key's state, made if it has none.
func (m *Memory) state(key string) *keyState {
	return getOrMake(m.keys, key, func() *keyState {
		return &keyState{holders: make(map[string]time.Time), windows: make(map[time.Duration]*window.History)}
	})
}

// check decides whether r can be granted on ks, its key's state, at now,
// without taking anything: the cooldown, then the windows (on a request
// with Members, each member's) and the concurrency; with first, a key with
// waiters in line refuses too, as what frees up is theirs.
func (m *Memory) check(ks *keyState, r Request, now time.Time, first bool) Verdict {
	if now.Before(ks.cooldown) {
		return Verdict{Reason: ReasonCooldown, At: ks.cooldown}
	}
	ns := int64(now.Sub(m.epoch))
	if len(r.Members) > 0 {
		v := Verdict{OK: true}
		for _, mem := range r.Members {
			if mk := m.keys[MemberKey(r.Key, mem)]; mk != nil {
				if mv := mk.admit(r, ns, m.epoch); !mv.OK {
					v.OK, v.Reason, v.Members = false, ReasonRate, append(v.Members, mem)
					v.At = latest(v.At, mv.At)
				}
			}
		}
		return v
	}
	if v := ks.admit(r, ns, m.epoch); !v.OK {
		return v
	}
	if r = m.capped(r); r.Concurrency > 0 {
		if next := ks.purge(now); len(ks.holders) >= r.Concurrency {
			return Verdict{Reason: ReasonConcurrency, At: next}
		}
	}
	if first && ks.waiters.Len() > 0 {
		return Verdict{Reason: ReasonConcurrency}
	}
	return Verdict{OK: true}
}

// take takes r, which fits, on ks, its key's state, with its With slots;
// if one of them cannot be taken now, it takes nothing and returns that
// slot's refusal, a LimitError on the slot's key.
func (m *Memory) take(ks *keyState, r Request, now time.Time) (Lease, error) {
	for _, s := range r.With {
		if v := m.check(m.state(s.Key), s, now, true); !v.OK {
			return Lease{}, v.Err(s.Key, now)
		}
	}
	m.seq++
	l := Lease{Key: r.Key, ID: strconv.FormatUint(m.seq, 36), Granted: now}
	ns := int64(now.Sub(m.epoch))
	if len(r.Members) == 0 {
		ks.count(r.Windows, ns, r.Units())
	}
	for _, mem := range r.Members {
		m.state(MemberKey(r.Key, mem)).count(r.Windows, ns, r.Units())
	}
	if r.Concurrency > 0 {
		l.Expires, l.Concurrency = now.Add(r.LeaseTTL()), m.capped(r).Concurrency
		ks.holders[l.ID] = l.Expires
	}
	for _, s := range r.With {
		sl, _ := m.take(m.state(s.Key), s, now)
		l.With = append(l.With, sl)
	}
	return l, nil
}

// TryAcquire implements Backend.
func (m *Memory) TryAcquire(ctx context.Context, r Request) (Lease, error) {
	return m.acquire(ctx, r, false)
}

// Acquire implements Backend.
func (m *Memory) Acquire(ctx context.Context, r Request) (Lease, error) {
	return m.acquire(ctx, r, true)
}

// acquire is Acquire, or with !wait TryAcquire.
func (m *Memory) acquire(ctx context.Context, r Request, wait bool) (Lease, error) {
	if err := cmp.Or(r.Validate(), ctx.Err()); err != nil {
		return Lease{}, err
	}
	r = r.Merged()
	if len(r.Members) > 0 {
		return m.members.Acquire(ctx, r, wait, m.tryMembers)
	}
	now, ks := m.lock(r.Key)
	// v is a lower bound on the wait even when others queue ahead.
	v := m.check(ks, r, now, true)
	if v.OK { // no line: taken now, without a waiter
		l, err := m.take(ks, r, now)
		m.mu.Unlock()
		if err != nil && wait { // take's only error: a With slot is busy
			return AcquireApart(ctx, m, r, true, nil)
		}
		return l, err
	}
	w := NewWaiter(ctx, r)
	if !wait || v.Fails(r, w.Deadline, v.At) {
		m.forget(r.Key, ks, now)
		m.mu.Unlock()
		return Lease{}, v.Err(r.Key, now)
	}
	ks.waiters.Push(&w)
	m.dispatch(r.Key, ks, now)
	m.mu.Unlock()
	Stalled(r, v, v.At)
	select {
	case <-w.Turn:
	case <-ctx.Done():
		m.giveUp(ks, &w)
		return Lease{}, ctx.Err()
	}
	if e, ok := w.Err.(*LimitError); ok && e.Key != r.Key {
		return AcquireApart(ctx, m, r, true, nil) // a With slot is busy: it holds nothing here
	}
	return w.lease, w.Err
}

// tryMembers is one attempt at r, a request with Members (see
// memberLines): taken whole if every member has room and ctx has not
// ended.
func (m *Memory) tryMembers(ctx context.Context, r Request) (l Lease, v Verdict, now time.Time, err error) {
	now, ks := m.lock(r.Key)
	defer m.mu.Unlock()
	defer m.forget(r.Key, ks, now)
	v = m.check(ks, r, now, false)
	if err = ctx.Err(); v.OK && err == nil {
		l, _ = m.take(ks, r, now) // no With slots
	}
	return l, v, now, err
}

// giveUp takes w, whose caller gave up, out of ks's line; a lease it was
// granted meanwhile goes back whole, as its call never starts.
func (m *Memory) giveUp(ks *keyState, w *Waiter) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	select {
	case <-w.Turn:
		if w.Err != nil {
			return
		}
		for _, win := range w.Req.Windows {
			if h := ks.windows[win.Period]; h != nil {
				h.Remove(int64(w.lease.Granted.Sub(m.epoch)), w.Req.Units())
			}
		}
		for _, s := range w.lease.With {
			_ = m.release(s, now)
		}
		_ = m.release(w.lease, now) // on a key forgotten since, it held nothing of its own
	default:
		if ks.waiters.Leave(w) {
			m.dispatch(w.Req.Key, ks, now)
		}
	}
}

// dispatch grants the queue's head as long as it fits, fails heads that cannot
// be served in time, and arms the key's timer for the next change. Called with
// m.mu held; it does nothing on a key forgotten since ks was its state.
func (m *Memory) dispatch(key string, ks *keyState, now time.Time) {
	if m.keys[key] != ks {
		return
	}
	for w, ok := ks.waiters.Head(); ok; w, ok = ks.waiters.Head() {
		v := m.check(ks, w.Req, now, false)
		if v.OK {
			var err error
			w.lease, err = m.take(ks, w.Req, now)
			ks.waiters.done(w, err)
			continue
		}
		if v.Fails(w.Req, w.Deadline, v.At) {
			ks.waiters.done(w, v.Err(key, now))
			continue
		}
		ks.waiters.FailBehind(v, v.At, v.Err(key, now))
		if v.At.IsZero() { // no known time: a release dispatches
			break
		}
		if ks.timer == nil {
			ks.timer = time.AfterFunc(v.At.Sub(now), func() {
				m.mu.Lock()
				defer m.mu.Unlock()
				m.dispatch(key, ks, time.Now())
			})
		} else {
			ks.timer.Reset(v.At.Sub(now))
		}
		return
	}
	if ks.timer != nil {
		ks.timer.Stop()
	}
	m.forget(key, ks, now)
}

// forget drops ks, key's state, if it is all in its default: without
// waiters (so its timer is stopped, see dispatch), a cooldown, holders or
// counts in its windows.
func (m *Memory) forget(key string, ks *keyState, now time.Time) {
	if ks.waiters.Len() > 0 || now.Before(ks.cooldown) || !ks.purge(now).IsZero() {
		return
	}
	ns := int64(now.Sub(m.epoch))
	for _, h := range ks.windows {
		if h.Prune(ns); len(h.Buckets) > 0 {
			return
		}
	}
	delete(m.keys, key)
}

// lock locks m.mu and returns the time and key's state (made if it has
// none). Now and then it drops idle keys first, so that keys touched once
// do not stay forever.
func (m *Memory) lock(key string) (time.Time, *keyState) {
	m.mu.Lock()
	now := time.Now()
	if !now.Before(m.nextSweep) {
		m.nextSweep = now.Add(time.Minute)
		for k, ks := range m.keys {
			m.forget(k, ks, now)
		}
	}
	return now, m.state(key)
}

// Release implements Backend.
func (m *Memory) Release(ctx context.Context, l Lease) error {
	first := ReleaseEach(ctx, m, l.With)
	if !l.OwnSlot() {
		return first
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return cmp.Or(first, m.release(l, time.Now()))
}

// release frees one lease's own slot. Called with m.mu held.
func (m *Memory) release(l Lease, now time.Time) error {
	ks := m.keys[l.Key]
	if ks == nil {
		return ErrLeaseNotHeld
	}
	held := now.Before(ks.holders[l.ID])
	delete(ks.holders, l.ID)
	m.dispatch(l.Key, ks, now)
	if !held {
		return ErrLeaseNotHeld
	}
	return nil
}

// Extend implements Backend.
func (m *Memory) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if ttl <= 0 {
		return l, invalidf("key %q: non-positive TTL %s", l.Key, ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	return ExtendAll(ctx, l, ttl, func(_ context.Context, l Lease, ttl time.Duration) (Lease, error) {
		ks := m.keys[l.Key]
		if ks == nil || !now.Before(ks.holders[l.ID]) {
			return l, ErrLeaseNotHeld
		}
		l.Expires = now.Add(ttl)
		ks.holders[l.ID] = l.Expires
		m.dispatch(l.Key, ks, now) // a shortened lease moves the waiters' next wake-up
		return l, nil
	})
}

// Cooldown implements Backend.
func (m *Memory) Cooldown(ctx context.Context, key string, d time.Duration) error {
	if key == "" {
		return invalidf("empty key")
	}
	if d <= 0 {
		return nil
	}
	now, ks := m.lock(key)
	defer m.mu.Unlock()
	ks.cooldown = latest(ks.cooldown, now.Add(d)) // a later end in force is kept
	m.dispatch(key, ks, now)
	return nil
}

// admit decides r's windows on ks at ns (nanoseconds since epoch): ok, or
// refused until the last of them opens.
func (ks *keyState) admit(r Request, ns int64, epoch time.Time) Verdict {
	v := Verdict{OK: true}
	for _, w := range r.Windows {
		if h := ks.windows[w.Period]; h != nil {
			h.Prune(ns)
			if ok, at := h.Admit(w.Limit, r.Units()); !ok {
				v = Verdict{Reason: ReasonRate, At: latest(v.At, epoch.Add(time.Duration(at)))}
			}
		}
	}
	return v
}

// count counts units at ns in each of ws.
func (ks *keyState) count(ws []Window, ns int64, units int) {
	for _, w := range ws {
		getOrMake(ks.windows, w.Period, func() *window.History {
			return &window.History{Period: int64(w.Period), Width: int64(w.Period) / BucketsPerWindow}
		}).Add(ns, units)
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

var _ Backend = (*Memory)(nil)
