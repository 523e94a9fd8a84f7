// Acquisitions on the Redis backend: TryAcquire, and Acquire, whose waiter
// queues locally and, as the head of its key's line, asks Redis (lead).

package throttle

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// TryAcquire implements Backend.
func (b *Redis) TryAcquire(ctx context.Context, r Request) (Lease, error) {
	return b.obtain(ctx, r, true)
}

// Acquire implements Backend.
func (b *Redis) Acquire(ctx context.Context, r Request) (Lease, error) {
	return b.obtain(ctx, r, false)
}

// obtain is Acquire, or TryAcquire with try: r's With slots are taken first
// (held while r waits for its slot), and a waiter of this process comes
// before r.
func (b *Redis) obtain(ctx context.Context, r Request, try bool) (Lease, error) {
	r = r.merged()
	if err := r.Validate(); err != nil {
		return Lease{}, err
	}
	if strings.ContainsAny(r.Key, "\r\n") {
		return Lease{}, invalidf("key %q holds a line break", r.Key)
	}
	for _, s := range r.With { // a key is a wake-up's message, which a line break makes a notice
		if strings.ContainsAny(s.Key, "\r\n") {
			return Lease{}, invalidf("key %q: with slot %q holds a line break", r.Key, s.Key)
		}
	}
	if r.Concurrency > 0 && r.TTL > 0 && r.TTL < time.Millisecond {
		return Lease{}, invalidf("key %q: TTL %s: the Redis backend counts in milliseconds", r.Key, r.TTL)
	}
	for _, w := range r.Windows {
		if w.Period < BucketsPerWindow*time.Millisecond {
			return Lease{}, invalidf("key %q: window %s: the Redis backend counts in milliseconds, so periods start at %s", r.Key, w, BucketsPerWindow*time.Millisecond)
		}
	}
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	if err := b.sendFor(ctx, r.Key); err != nil {
		return Lease{}, err
	}
	for {
		stop := stallAfter(r)
		down, err := b.ready(ctx)
		stop()
		if err != nil {
			return Lease{}, err
		}
		if !down {
			break
		}
		if l, again, err := b.outage(ctx, r, try, nil); !again {
			return l, err
		}
	}
	switch {
	case len(r.With) > 0:
		return acquireApart(ctx, b, r, !try)
	case len(r.Members) > 0 && !try:
		return b.memberLines.acquire(ctx, r, true, b.tryMembers)
	case !try:
		return b.wait(ctx, r)
	}
	var (
		res acquireResult
		err error
	)
	if len(r.Members) > 0 {
		if busy := b.memberLines.busy(r); len(busy) > 0 {
			return Lease{}, &LimitError{Key: r.Key, Reason: ReasonConcurrency, Members: busy}
		}
		res, err = b.attempt(ctx, acquireArgs{r: r, take: true})
	} else {
		b.mu.Lock()
		k := b.keys[r.Key]
		queued := k != nil && k.waiters.len() > 0
		b.mu.Unlock()
		res, err = b.attempt(ctx, acquireArgs{r: r, take: !queued, plain: !queued})
		if err == nil && res.v.ok && queued {
			res.v = verdict{reason: ReasonConcurrency}
		}
	}
	switch {
	case err != nil:
		l, _, err := b.acquireFailed(ctx, r, true, err)
		return l, err
	case !res.v.ok:
		return Lease{}, res.v.err(r.Key, res.now)
	}
	return res.lease, nil
}

// acquireFailed answers an acquisition of r whose round trip failed with
// err: as outage does if Redis is out (try: without waiting; again: ask
// Redis again, it answers), else err.
func (b *Redis) acquireFailed(ctx context.Context, r Request, try bool, err error) (l Lease, again bool, _ error) {
	out, err := b.failed("acquire", err)
	if out {
		return b.outage(ctx, r, try, err)
	}
	return Lease{}, false, err
}

// wait is Acquire once the request is known to go to Redis: it queues in
// its key's line, waits for its turn (or a hand-over from a Release) and
// then leads.
func (b *Redis) wait(ctx context.Context, r Request) (l Lease, err error) {
	b.mu.Lock()
	k := getOrMake(b.keys, r.Key, func() *rkey { return &rkey{wake: make(chan bool, 1)} })
	w := &rwaiter{waiter: newWaiter(ctx, r), slot: make(chan Lease, 1)}
	var behind refusal // the refusal of the head w queues behind (a new k has none)
	if f := k.refused; f != nil {
		if left := time.Until(f.at); left > 0 && f.v.fails(r, w.deadline, f.at) {
			b.mu.Unlock() // w fails at once, as the head would (see verdict.fails)
			return Lease{}, &LimitError{Key: r.Key, Reason: f.v.reason, RetryAfter: left}
		}
		behind = *f
	}
	if k.waiters.push(w) {
		close(w.turn)
	}
	b.mu.Unlock()
	stalled(r, behind.v, behind.at)
	defer func() {
		b.leave(r.Key, k, w, err == nil && !strings.HasPrefix(l.ID, localLease)) // served by Redis
	}()
	for {
		if l, err := b.await(ctx, w, nil, w.turn, StallAfter, nil); err != nil || l.ID != "" {
			return l, err
		}
		select {
		case <-w.turn:
			if w.err != nil {
				return Lease{}, w.err
			}
			return b.lead(ctx, k, w)
		default:
			b.tellSilence(w)
		}
	}
}

// lead is Acquire for w once it heads the line k: it asks Redis, or waits
// for a hand-over, a wake-up, the time the script named or a resync, until
// it has a lease or fails.
func (b *Redis) lead(ctx context.Context, k *rkey, w *rwaiter) (Lease, error) {
	woken := false // the last wake-up was this process's turn
	for first := true; ; first = false {
		b.tellSilence(w)
		if down, err := b.ready(ctx); err != nil {
			return Lease{}, err
		} else if down { // Redis failed while this waiter queued: wait for it at the head
			if l, again, err := b.outage(ctx, w.req, false, nil); !again {
				return l, err
			}
			continue
		}
		// A Release handing a slot over (claimed, or already sent): take it
		// rather than ask. Right after a hand-over that found every slot held
		// and queued this process again, the next head waits without asking;
		// while this process holds every slot, until the first of them expires.
		b.mu.Lock()
		wait := time.Second
		skip := w.claimed || len(w.slot) > 0 || w.yielded && !woken
		if first && !skip {
			all, until := b.holdsAll(w.req)
			skip = k.full || all
			if all {
				wait = min(wait, max(until, time.Millisecond))
			}
		}
		k.full, w.yielded = false, false
		w.busy = !skip
		more := k.waiters.len() > 1
		b.mu.Unlock()
		if !skip {
			l, d, err := b.ask(ctx, k, w, woken, more)
			if err != nil || l.ID != "" {
				return l, err
			}
			wait, woken = d, false
		}
		if l, err := b.await(ctx, w, k.wake, nil, wait, &woken); err != nil || l.ID != "" {
			return l, err
		}
	}
}

// ask is one round trip of the head w of k (woken: the last wake-up was
// this process's turn; more: others queue). It returns a lease or an error,
// or else how long to wait at most before asking again.
func (b *Redis) ask(ctx context.Context, k *rkey, w *rwaiter, woken, more bool) (Lease, time.Duration, error) {
	r := w.req
	res, more, err := b.askFor(ctx, w, Lease{}, more)
	v, now := res.v, res.now
	at := time.Now().Add(v.at.Sub(now)) // when the refusing limit frees up, on the local clock
	// Granted, w stays busy, so that no Release hands it a slot on its way
	// out; refused, waiters arriving behind it fail at once as it would.
	b.mu.Lock()
	w.busy = err == nil && v.ok
	if err == nil && v.ok {
		k.refused = nil
		if !more { // this process left the waiting queue
			k.full = false
		}
	} else if err == nil {
		k.refused = &refusal{v: v, at: at}
		k.waiters.failBehind(v, at, v.err(r.Key, now))
	}
	b.mu.Unlock()
	switch {
	case err != nil:
		l, again, err := b.acquireFailed(ctx, r, false, err)
		if again { // Redis answers again: ask it at once
			return Lease{}, 0, nil
		}
		return l, 0, err
	case v.ok && ctx.Err() != nil:
		b.giveBack(res.lease, r) // granted as the caller gave up: the call never starts
		return Lease{}, 0, ctx.Err()
	case v.ok:
		return res.lease, 0, nil
	}
	if woken && v.reason != ReasonConcurrency {
		b.passOn(r.Key) // woken for a slot this head cannot use now: the next process can
	}
	if v.fails(r, w.deadline, at) {
		return Lease{}, 0, v.err(r.Key, now)
	}
	if w.told.news(v, at) {
		stalled(r, v, at)
	}
	d := time.Second
	if !v.at.IsZero() {
		d = min(d, v.at.Sub(now)+time.Millisecond)
	}
	return Lease{}, d, nil
}

// await waits, for at most d, for a hand-over to w, the wake-up wake of its
// line's head (which sets *woken to whether it was this process's turn), its
// turn to head it, ctx or Close; nil channels are not waited for.
func (b *Redis) await(ctx context.Context, w *rwaiter, wake <-chan bool, turn <-chan struct{}, d time.Duration, woken *bool) (Lease, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case *woken = <-wake:
	case <-turn:
	case <-t.C:
	case l := <-w.slot: // handed over by a Release, or none (zero) if the hand-over got none
		if l.ID != "" && ctx.Err() != nil {
			b.giveBack(l, w.req) // w's caller has left
			return Lease{}, ctx.Err()
		}
		return l, nil
	case <-ctx.Done():
		return Lease{}, ctx.Err()
	case <-b.done:
		return Lease{}, errClosed()
	}
	return Lease{}, nil
}

// errClosed is what a waiter gets when the backend is closed under it.
func errClosed() error { return fmt.Errorf("%w: closed", ErrUnavailable) }

// The acquire script's answers beyond the Reasons: to a hand-over that left
// the slot to another process (yielded), to a process that knew another
// epoch of the key, whose state Redis lost (lost), and to a request it ran
// after this process would have given up on it (stale, see serverRef): it
// took nothing, and only a wrong estimate of the server's clock gets it an
// answer: wait and ask again.
const (
	reasonYielded Reason = 4
	reasonLost    Reason = 5
	reasonStale   Reason = 8
)
