// Acquisitions on the Redis backend: TryAcquire, and Acquire, whose waiter
// queues locally and, as the head of its key's line, asks Redis (lead).

package redis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// TryAcquire implements Backend.
func (b *Backend) TryAcquire(ctx context.Context, r throttle.Request) (throttle.Lease, error) {
	return b.obtain(ctx, r, true)
}

// Acquire implements Backend.
func (b *Backend) Acquire(ctx context.Context, r throttle.Request) (throttle.Lease, error) {
	return b.obtain(ctx, r, false)
}

// obtain is Acquire, or TryAcquire with try: r's With slots are taken first
// (held while r waits for its slot), and a waiter of this process comes
// before r.
func (b *Backend) obtain(ctx context.Context, r throttle.Request, try bool) (throttle.Lease, error) {
	r = r.Merged()
	if err := r.Validate(); err != nil {
		return throttle.Lease{}, err
	}
	if strings.ContainsAny(r.Key, "\r\n") {
		return throttle.Lease{}, invalidf("key %q holds a line break", r.Key)
	}
	for _, s := range r.With { // a key is a wake-up's message, which a line break makes a notice
		if strings.ContainsAny(s.Key, "\r\n") {
			return throttle.Lease{}, invalidf("key %q: with slot %q holds a line break", r.Key, s.Key)
		}
	}
	if r.Concurrency > 0 && r.TTL > 0 && r.TTL < time.Millisecond {
		return throttle.Lease{}, invalidf("key %q: TTL %s: the Redis backend counts in milliseconds", r.Key, r.TTL)
	}
	for _, w := range r.Windows {
		if w.Period < throttle.BucketsPerWindow*time.Millisecond {
			return throttle.Lease{}, invalidf("key %q: window %s: the Redis backend counts in milliseconds, so periods start at %s", r.Key, w, throttle.BucketsPerWindow*time.Millisecond)
		}
	}
	if err := ctx.Err(); err != nil {
		return throttle.Lease{}, err
	}
	if err := b.sendFor(ctx, r.Key); err != nil {
		return throttle.Lease{}, err
	}
	for {
		stop := func() bool { return false }
		if b.health.Load() == healthUnknown { // only then does ready wait
			stop = watchStall(r)
		}
		down, err := b.ready(ctx)
		stop()
		if err != nil {
			return throttle.Lease{}, err
		}
		if !down {
			break
		}
		if l, again, err := b.outage(ctx, r, try, nil); !again {
			return l, err
		}
	}
	if l, ok := b.startFromBlock(r, false); ok {
		return l, nil
	}
	switch {
	case len(r.With) > 0:
		return throttle.AcquireApart(ctx, b, r, !try, b.Era) // a new era: its locks may be forgotten
	case len(r.Members) > 0 && !try:
		return b.memberLines.Acquire(ctx, r, true, b.tryMembers)
	case !try:
		return b.wait(ctx, r)
	}
	var (
		res acquireResult
		err error
	)
	if len(r.Members) > 0 {
		if busy := b.memberLines.Busy(r); len(busy) > 0 {
			return throttle.Lease{}, &throttle.LimitError{Key: r.Key, Reason: throttle.ReasonConcurrency, Members: busy}
		}
		res, err = b.attempt(ctx, acquireArgs{r: r, take: true})
	} else {
		b.mu.Lock()
		k := b.keys[r.Key]
		queued := k != nil && k.waiters.Len() > 0
		b.mu.Unlock()
		res, err = b.attempt(ctx, acquireArgs{r: r, take: !queued, plain: !queued})
		if err == nil && res.v.OK && queued {
			res.v = throttle.Verdict{Reason: throttle.ReasonConcurrency}
		}
	}
	switch {
	case err != nil:
		l, _, err := b.acquireFailed(ctx, r, true, err)
		return l, err
	case !res.v.OK:
		return throttle.Lease{}, res.v.Err(r.Key, res.now)
	}
	return res.lease, nil
}

// acquireFailed answers an acquisition of r whose round trip failed with
// err: as outage does if Redis is out (try: without waiting; again: ask
// Redis again, it answers), else err.
func (b *Backend) acquireFailed(ctx context.Context, r throttle.Request, try bool, err error) (l throttle.Lease, again bool, _ error) {
	out, err := b.failed("acquire", err)
	if out {
		return b.outage(ctx, r, try, err)
	}
	return throttle.Lease{}, false, err
}

// wait is Acquire once the request is known to go to Redis: it queues in
// its key's line, waits for its turn (or a hand-over from a Release) and
// then leads.
func (b *Backend) wait(ctx context.Context, r throttle.Request) (l throttle.Lease, err error) {
	b.mu.Lock()
	k := getOrMake(b.keys, r.Key, func() *rkey { return &rkey{wake: make(chan bool, 1)} })
	w := &rwaiter{Waiter: throttle.NewWaiter(ctx, r), slot: make(chan throttle.Lease, 1)}
	var behind refusal // the refusal of the head w queues behind (a new k has none)
	if f := k.refused; f != nil {
		if left := time.Until(f.at); left > 0 && f.v.Fails(r, w.Deadline, f.at) {
			b.mu.Unlock() // w fails at once, as the head would (see verdict.fails)
			return throttle.Lease{}, &throttle.LimitError{Key: r.Key, Reason: f.v.Reason, RetryAfter: left}
		}
		behind = *f
	}
	if k.waiters.Push(w) {
		close(w.Turn)
	}
	b.mu.Unlock()
	throttle.Stalled(r, behind.v, behind.at)
	defer func() {
		b.leave(r.Key, k, w, err == nil && !strings.HasPrefix(l.ID, localLease)) // served by Redis
	}()
	for {
		if l, err := b.await(ctx, w, nil, w.Turn, throttle.StallAfter, nil); err != nil || l.ID != "" {
			return l, err
		}
		select {
		case <-w.Turn:
			if w.Err != nil {
				return throttle.Lease{}, w.Err
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
func (b *Backend) lead(ctx context.Context, k *rkey, w *rwaiter) (throttle.Lease, error) {
	woken := false // the last wake-up was this process's turn
	for first := true; ; first = false {
		b.tellSilence(w)
		if down, err := b.ready(ctx); err != nil {
			return throttle.Lease{}, err
		} else if down { // Redis failed while this waiter queued: wait for it at the head
			if l, again, err := b.outage(ctx, w.Req, false, nil); !again {
				return l, err
			}
			continue
		}
		if l, ok := b.startFromBlock(w.Req, true); ok {
			return l, nil
		}
		// A Release handing a slot over (claimed, or already sent): take it
		// rather than ask. Right after a hand-over that found every slot held
		// and queued this process again, the next head waits without asking;
		// while this process holds every slot, until the first of them expires.
		b.mu.Lock()
		wait := b.resync
		skip := w.claimed || len(w.slot) > 0 || w.yielded && !woken
		if first && !skip {
			all, until := b.holdsAll(w.Req)
			skip = k.full || all
			if all {
				wait = min(wait, max(until, time.Millisecond))
			}
		}
		k.full, w.yielded = false, false
		w.busy = !skip
		more := k.waiters.Len() > 1
		b.mu.Unlock()
		if !skip {
			l, d, err := b.ask(ctx, k, w, woken, more)
			if err != nil || l.ID != "" {
				return l, err
			}
			wait, woken = d, false
		}
		l, err := b.await(ctx, w, k.wake, nil, wait, &woken)
		if woken && (l.ID != "" || err != nil) {
			b.rewake(k) // the turn this head took went unused: the next head's
		}
		if err != nil || l.ID != "" {
			return l, err
		}
	}
}

// resyncAfter is how long a head waits for a hand-over or a wake-up at most
// before it asks Redis again: what a lost message costs.
const resyncAfter = time.Second

// rewake gives the next head of k the wake-up for this process's turn that
// a head took and did not use, being handed a slot meanwhile or leaving:
// the slot the wake-up announced may stand free, with no other message to
// come for it.
func (b *Backend) rewake(k *rkey) {
	b.mu.Lock()
	k.wakeUp(true)
	b.mu.Unlock()
}

// ask is one round trip of the head w of k (woken: the last wake-up was
// this process's turn; more: others queue). It returns a lease or an error,
// or else how long to wait at most before asking again.
func (b *Backend) ask(ctx context.Context, k *rkey, w *rwaiter, woken, more bool) (throttle.Lease, time.Duration, error) {
	r := w.Req
	res, more, err := b.askFor(ctx, w, throttle.Lease{}, more)
	v, now := res.v, res.now
	at := time.Now().Add(v.At.Sub(now)) // when the refusing limit frees up, on the local clock
	// Granted, w stays busy, so that no Release hands it a slot on its way
	// out; refused, waiters arriving behind it fail at once as it would.
	b.mu.Lock()
	w.busy = err == nil && v.OK
	if err == nil && v.OK {
		k.refused = nil
		if !more { // this process left the waiting queue
			k.full = false
		}
	} else if err == nil {
		k.refused = &refusal{v: v, at: at}
		k.waiters.FailBehind(v, at, v.Err(r.Key, now))
	}
	b.mu.Unlock()
	switch {
	case err != nil:
		l, again, err := b.acquireFailed(ctx, r, false, err)
		if again { // Redis answers again: ask it at once
			return throttle.Lease{}, 0, nil
		}
		return l, 0, err
	case v.OK && ctx.Err() != nil:
		b.giveBack(res.lease, r) // granted as the caller gave up: the call never starts
		return throttle.Lease{}, 0, ctx.Err()
	case v.OK:
		return res.lease, 0, nil
	}
	if woken && v.Reason != throttle.ReasonConcurrency {
		b.passOn(r.Key) // woken for a slot this head cannot use now: the next process can
	}
	if v.Fails(r, w.Deadline, at) {
		return throttle.Lease{}, 0, v.Err(r.Key, now)
	}
	if w.told.News(v, at) {
		throttle.Stalled(r, v, at)
	}
	d := b.resync
	if !v.At.IsZero() {
		d = min(d, v.At.Sub(now)+time.Millisecond)
	}
	return throttle.Lease{}, d, nil
}

// await waits, for at most d, for a hand-over to w, the wake-up wake of its
// line's head (which sets *woken to whether it was this process's turn), its
// turn to head it, ctx or Close; nil channels are not waited for.
func (b *Backend) await(ctx context.Context, w *rwaiter, wake <-chan bool, turn <-chan struct{}, d time.Duration, woken *bool) (throttle.Lease, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case *woken = <-wake:
	case <-turn:
	case <-t.C:
	case l := <-w.slot: // handed over by a Release, or none (zero) if the hand-over got none
		if l.ID != "" && ctx.Err() != nil {
			b.giveBack(l, w.Req) // w's caller has left
			return throttle.Lease{}, ctx.Err()
		}
		return l, nil
	case <-ctx.Done():
		return throttle.Lease{}, ctx.Err()
	case <-b.done:
		return throttle.Lease{}, errClosed()
	}
	return throttle.Lease{}, nil
}

// errClosed is what a waiter gets when the backend is closed under it.
func errClosed() error { return fmt.Errorf("%w: closed", throttle.ErrUnavailable) }

// The acquire script's answers beyond the Reasons: to a hand-over that left
// the slot to another process (yielded), to a process that knew another
// epoch of the key, whose state Redis lost (lost), and to a request it ran
// after this process would have given up on it (stale, see serverRef): it
// took nothing, and only a wrong estimate of the server's clock gets it an
// answer: wait and ask again.
const (
	reasonYielded throttle.Reason = 4
	reasonLost    throttle.Reason = 5
	reasonStale   throttle.Reason = 8
)
