// Acquisitions on the Redis backend: TryAcquire, and Acquire, whose waiter
// queues, awaits its turn (awaitTurn) and, as the head of its key's queue,
// asks Redis (lead); one run of the acquire script (attempt, attemptOnce) and
// the parsing of its answer.

package throttle

import (
	"context"
	"fmt"
	"time"
)

// precheck refuses a malformed r or an ended ctx and, while Redis is down,
// serves r as the fallback says (try: without waiting); done reports that
// it answered.
func (b *Redis) precheck(ctx context.Context, r Request, try bool) (l Lease, done bool, err error) {
	if err := b.validate(r); err != nil {
		return Lease{}, true, err
	}
	if err := ctx.Err(); err != nil {
		return Lease{}, true, err
	}
	if err := b.sendFor(ctx, r.Key); err != nil {
		return Lease{}, true, err
	}
	stop := stallAfter(ctx, r.Key)
	down, err := b.ready(ctx)
	stop()
	if err != nil {
		return Lease{}, true, err
	} else if down {
		l, err := b.instead(ctx, r, try, nil)
		return l, true, err
	}
	return Lease{}, false, nil
}

// TryAcquire implements Backend.
func (b *Redis) TryAcquire(ctx context.Context, r Request) (Lease, error) {
	r = r.merged()
	if l, done, err := b.precheck(ctx, r, true); done {
		return l, err
	}
	if len(r.With) > 0 {
		return tryApart(ctx, b, r)
	}
	if len(r.Members) > 0 {
		return b.tryMembersOnce(ctx, r)
	}
	b.mu.Lock()
	queued := b.keys[r.Key].waiting()
	b.mu.Unlock()
	res, err := b.attempt(ctx, acquireArgs{r: r, take: !queued})
	if err != nil {
		outage, err := b.failed("acquire", err)
		if outage {
			return b.instead(ctx, r, true, err)
		}
		return Lease{}, err
	}
	v := res.v
	if v.ok && queued {
		v = verdict{reason: ReasonConcurrency} // local waiters came first
	}
	if !v.ok {
		return Lease{}, v.err(r.Key, res.now)
	}
	return res.lease, nil
}

// Acquire implements Backend.
func (b *Redis) Acquire(ctx context.Context, r Request) (Lease, error) {
	r = r.merged()
	if l, done, err := b.precheck(ctx, r, false); done {
		return l, err
	}
	if len(r.With) > 0 { // the With slots first, held while r waits for its slot
		return acquireApart(ctx, b, r)
	}
	if len(r.Members) > 0 {
		return b.memberLines.acquire(ctx, r, b.tryMembers)
	}
	return b.wait(ctx, r)
}

// wait is Acquire once the request is known to go to Redis: it queues
// locally, waits for its turn and then leads.
func (b *Redis) wait(ctx context.Context, r Request) (Lease, error) {
	// Queue locally; only the head of a key's queue talks to Redis, and a
	// Release of this process may hand its slot to any waiter.
	b.mu.Lock()
	k := b.keys[r.Key]
	if k == nil {
		k = &rkey{wake: make(chan struct{}, 1)}
		b.keys[r.Key] = k
	}
	var behind refusal // the refusal of the head this waiter queues behind
	if k.waiting() {
		if err := k.refused.failsAtOnce(ctx, r); err != nil {
			b.mu.Unlock()
			return Lease{}, err
		}
		if k.refused != nil {
			behind = *k.refused
		}
	}
	w := &rwaiter{waiter: newWaiter(ctx, r), slot: make(chan Lease, 1)}
	if k.waiters.push(w) {
		close(w.turn)
	}
	b.mu.Unlock()
	stalled(ctx, r.Key, behind.v, behind.at)
	served := false
	defer b.leave(r.Key, k, w, &served)

	if l, ok, err := b.awaitTurn(ctx, w); err != nil || ok {
		served = ok
		return l, err
	}
	return b.lead(ctx, r, k, w, &served)
}

// awaitTurn waits until w reaches the head of its key's queue, or fails. A
// lease a Release of this process hands over meanwhile serves it: ok
// reports that l is one.
func (b *Redis) awaitTurn(ctx context.Context, w *rwaiter) (l Lease, ok bool, err error) {
	tick := time.NewTicker(StallAfter)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			b.tellSilence(ctx, w.req.Key, w)
		case <-w.turn:
			if w.err != nil {
				return Lease{}, false, w.err
			}
			return Lease{}, false, nil
		case l := <-w.slot:
			if l, ok, err := b.accept(ctx, l, w); err != nil || ok {
				return l, ok, err
			}
		case <-ctx.Done():
			return Lease{}, false, ctx.Err()
		case <-b.done:
			return Lease{}, false, errClosed()
		}
	}
}

// lead is Acquire for w once it heads the queue k: it asks
// Redis, or waits for a hand-over, a wake-up, the time the script named or a
// resync, until it has a lease or fails. It sets *served when it returns a
// lease of Redis.
func (b *Redis) lead(ctx context.Context, r Request, k *rkey, w *rwaiter, served *bool) (Lease, error) {
	woken := false
	for first := true; ; first = false {
		b.tellSilence(ctx, r.Key, w)
		if down, err := b.ready(ctx); err != nil { // Redis failed while this waiter queued
			return Lease{}, err
		} else if down {
			return b.instead(ctx, r, false, nil)
		}
		skip, more, wait := b.startRound(k, w, first, woken)
		if !skip {
			l, d, done, err := b.ask(ctx, r, k, w, woken, more, served)
			if done {
				return l, err
			}
			wait, woken = d, false
		}
		l, ok, err := b.await(ctx, k, w, wait, &woken)
		if err != nil || ok {
			*served = ok
			return l, err
		}
	}
}

// ask is one round trip of the head w of k (woken: the
// last wake-up was this process's turn; more: other waiters queue). done
// reports that it ended the acquisition, with l (*served set when it is a
// lease of Redis) or err; otherwise the head waits at most d before asking
// again.
func (b *Redis) ask(ctx context.Context, r Request, k *rkey, w *rwaiter, woken, more bool, served *bool) (l Lease, d time.Duration, done bool, err error) {
	batch, more := b.claimBatch(r.Key, w, r, more)
	res, err := b.attempt(ctx, acquireArgs{r: r, take: true, batch: len(batch), queue: true, requeue: more, block: b.blockFor(r)})
	b.deliver(r.Key, batch, res.extra)
	v, now := res.v, res.now
	at := time.Now().Add(v.at.Sub(now)) // when the refusing limit frees up, on the local clock
	b.noteAnswer(k, w, v, at, err, more)
	switch {
	case err != nil:
		outage, err := b.failed("acquire", err)
		if outage {
			l, err := b.instead(ctx, r, false, err)
			return l, 0, true, err
		}
		return Lease{}, 0, true, err
	case v.ok && ctx.Err() != nil:
		b.giveBack(res.lease, r) // granted as the caller gave up: the call never starts
		return Lease{}, 0, true, ctx.Err()
	case v.ok:
		*served = true
		return res.lease, 0, true, nil
	}
	b.mu.Lock()
	k.waiters.failBehind(v, at, v.err(r.Key, now))
	b.mu.Unlock()
	if woken && v.reason != ReasonConcurrency {
		b.passOn(r.Key) // woken for a slot this head cannot use now: the next process can
	}
	if v.fails(r, w.deadline, at) {
		return Lease{}, 0, true, v.err(r.Key, now)
	}
	if w.told.news(v, at) {
		stalled(ctx, r.Key, v, at)
	}
	d = time.Second
	if !v.at.IsZero() {
		d = min(d, v.at.Sub(now)+time.Millisecond)
	}
	return Lease{}, d, false, nil
}

// await waits, for at most d, for a hand-over to w, a wake-up of k's head
// (which sets *woken to whether it was this process's turn), ctx or Close.
// ok reports that l, a hand-over, serves w.
func (b *Redis) await(ctx context.Context, k *rkey, w *rwaiter, d time.Duration, woken *bool) (l Lease, ok bool, err error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-k.wake:
		b.mu.Lock()
		*woken, k.targeted = k.targeted, false
		b.mu.Unlock()
	case <-t.C:
	case l := <-w.slot:
		return b.accept(ctx, l, w)
	case <-ctx.Done():
		return Lease{}, false, ctx.Err()
	case <-b.done:
		return Lease{}, false, errClosed()
	}
	return Lease{}, false, nil
}

// startRound starts a round of the head w of k (first: its first; woken: the
// last wake-up was this process's turn). It reports whether w skips asking
// Redis this round, marking it busy otherwise, whether more than one
// waiter queues on the key, and how long a round that skips waits at most.
func (b *Redis) startRound(k *rkey, w *rwaiter, first, woken bool) (skip, more bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// A Release handing a slot over (claimed, or already sent): take it
	// rather than ask. Right after a hand-over that found every slot held
	// and queued this process again, the next head waits without asking;
	// while this process holds every slot, until the first of them expires.
	wait = time.Second
	skip = w.claimed || len(w.slot) > 0 || w.yielded && !woken
	if first && !skip {
		all, until := b.holdsAll(w.req)
		skip = k.full || all
		if all {
			wait = min(wait, max(until, time.Millisecond))
		}
	}
	k.full, w.yielded = false, false
	w.busy = !skip
	return skip, k.waiters.len() > 1, wait
}

// noteAnswer records what Redis answered the head w of k, its round trip
// done: w is no longer busy unless it leaves the line granted, so that no
// Release hands it a slot on its way out;
// and the refusal that waiters arriving behind it fail at once for (see
// failsAtOnce) is the new one, or none after a grant.
func (b *Redis) noteAnswer(k *rkey, w *rwaiter, v verdict, at time.Time, err error, more bool) {
	b.mu.Lock()
	w.busy = err == nil && v.ok
	if err == nil && v.ok {
		k.refused = nil
		if !more { // this process left the waiting queue
			k.full = false
		}
	} else if err == nil {
		k.refused = &refusal{v: v, at: at}
	}
	b.mu.Unlock()
}

// reasonYielded is the acquire script's answer to a hand-over that left the
// slot to another process.
const reasonYielded Reason = 4

// errClosed is what a waiter gets when the backend is closed under it.
func errClosed() error { return fmt.Errorf("%w: closed", ErrUnavailable) }

// accept takes what a Release of this process handed w: a
// lease, or a zero Lease when it got none. ok: l serves w. A lease w can no
// longer use (ctx ended) is given back.
func (b *Redis) accept(ctx context.Context, l Lease, w *rwaiter) (_ Lease, ok bool, _ error) {
	if l.ID == "" {
		return Lease{}, false, nil
	}
	if ctx.Err() != nil {
		b.giveBack(l, w.req)
		return Lease{}, false, nil
	}
	return l, true, nil
}

// reasonLost is the acquire script's answer to a process that knew another
// epoch of the key: Redis lost the key's state.
const reasonLost Reason = 5
