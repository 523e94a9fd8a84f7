// Acquisitions on the Redis backend: TryAcquire, and Acquire, whose waiter
// queues, awaits its turn (awaitTurn) and, as the head of its key's queue,
// asks Redis (lead); one run of the acquire script (attempt, attemptOnce) and
// the parsing of its answer.

package throttle

import (
	"container/list"
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
	if down, err := b.ready(ctx); err != nil {
		return Lease{}, true, err
	} else if down {
		l, err := b.instead(ctx, r, try, nil)
		return l, true, err
	}
	return Lease{}, false, nil
}

// TryAcquire implements Backend.
func (b *Redis) TryAcquire(ctx context.Context, r Request) (Lease, error) {
	if l, done, err := b.precheck(ctx, r, true); done {
		return l, err
	}
	b.mu.Lock()
	queued := b.keys[r.Key] != nil && b.keys[r.Key].queue.Len() > 0
	b.mu.Unlock()
	l, v, now, _, err := b.attempt(ctx, r, !queued, false, "", false)
	if err != nil {
		outage, err := b.failed("acquire", err)
		if outage {
			return b.instead(ctx, r, true, err)
		}
		return Lease{}, err
	}
	if v.ok && queued {
		v = verdict{reason: ReasonConcurrency} // local waiters came first
	}
	if !v.ok {
		return Lease{}, v.err(r.Key, now)
	}
	return l, nil
}

// Acquire implements Backend.
func (b *Redis) Acquire(ctx context.Context, r Request) (Lease, error) {
	if l, done, err := b.precheck(ctx, r, false); done {
		return l, err
	}
	// Queue locally; only the head of a key's queue talks to Redis, and a
	// Release of this process may hand its slot to any waiter.
	b.mu.Lock()
	k := b.keys[r.Key]
	if k == nil {
		k = &rkey{wake: make(chan struct{}, 1)}
		b.keys[r.Key] = k
	}
	if k.queue.Len() > 0 {
		if err := k.refused.failsAtOnce(ctx, r); err != nil {
			b.mu.Unlock()
			return Lease{}, err
		}
	}
	w := &rwaiter{req: r, turn: make(chan struct{}), slot: make(chan Lease, 1)}
	e := k.queue.PushBack(w)
	if k.queue.Front() == e {
		close(w.turn)
	}
	b.mu.Unlock()
	served := false
	defer b.leave(r.Key, k, e, w, &served)

	if l, ok, err := b.awaitTurn(ctx, r, w); err != nil || ok {
		served = ok
		return l, err
	}
	return b.lead(ctx, r, k, e, w, &served)
}

// awaitTurn waits until w, queued for r, reaches the head of its key's queue,
// or fails. A lease a Release of this process hands over meanwhile serves it:
// ok reports that l is one.
func (b *Redis) awaitTurn(ctx context.Context, r Request, w *rwaiter) (l Lease, ok bool, err error) {
	for {
		select {
		case <-w.turn:
			if w.err != nil {
				return Lease{}, false, w.err
			}
			return Lease{}, false, nil
		case l := <-w.slot:
			if l, ok := b.accept(ctx, l, r); ok {
				return l, true, nil
			}
		case <-ctx.Done():
			return Lease{}, false, ctx.Err()
		case <-b.done:
			return Lease{}, false, errClosed()
		}
	}
}

// lead is Acquire for w once it heads the queue k (its element e): it asks
// Redis, or waits for a hand-over, a wake-up, the time the script named or a
// resync, until it has a lease or fails. It sets *served when it returns a
// lease of Redis.
func (b *Redis) lead(ctx context.Context, r Request, k *rkey, e *list.Element, w *rwaiter, served *bool) (Lease, error) {
	woken := false
	for first := true; ; first = false {
		if down, err := b.ready(ctx); err != nil { // Redis failed while this waiter queued
			return Lease{}, err
		} else if down {
			return b.instead(ctx, r, false, nil)
		}
		skip, more := b.startRound(k, w, first, woken)
		// Wait for a hand-over, a release or cooldown notice, for the time
		// the script named, or for a resync.
		d := time.Second
		if !skip {
			l, v, now, _, err := b.attempt(ctx, r, true, true, "", more)
			b.noteAnswer(k, w, v, now, err, more)
			if err != nil {
				outage, err := b.failed("acquire", err)
				if outage {
					return b.instead(ctx, r, false, err)
				}
				return Lease{}, err
			}
			if v.ok {
				if ctx.Err() != nil {
					// Granted as the caller gave up: the call never starts.
					b.giveBack(l, r)
					return Lease{}, ctx.Err()
				}
				*served = true
				return l, nil
			}
			if v.reason == ReasonCooldown {
				b.failNonWaiting(k, e, v.err(r.Key, now))
			}
			if woken && v.reason != ReasonConcurrency {
				// Woken for a slot this head cannot use now: the next process can.
				b.passOn(r.Key)
			}
			woken = false
			if v.reason == ReasonCooldown && !r.WaitCooldown ||
				v.reason != ReasonConcurrency && deadlineBefore(ctx, time.Now().Add(v.at.Sub(now))) {
				return Lease{}, v.err(r.Key, now)
			}
			if !v.at.IsZero() {
				d = min(d, v.at.Sub(now)+time.Millisecond)
			}
		}
		t := time.NewTimer(d)
		select {
		case <-k.wake:
			b.mu.Lock()
			woken, k.targeted = k.targeted, false
			b.mu.Unlock()
		case <-t.C:
		case l := <-w.slot:
			if l, ok := b.accept(ctx, l, r); ok {
				t.Stop()
				*served = true
				return l, nil
			}
		case <-ctx.Done():
			t.Stop()
			return Lease{}, ctx.Err()
		case <-b.done:
			t.Stop()
			return Lease{}, errClosed()
		}
		t.Stop()
	}
}

// startRound starts a round of the head w of k (first: its first; woken: the
// last wake-up was this process's turn). It reports whether w skips asking
// Redis this round, marking it busy otherwise, and whether more than one
// waiter queues on the key.
func (b *Redis) startRound(k *rkey, w *rwaiter, first, woken bool) (skip, more bool) {
	b.mu.Lock()
	// A Release handing a slot over (claimed, or already sent): take it
	// rather than ask. Right after a hand-over that found every slot held
	// and queued this process again, the next head waits without asking.
	skip = w.claimed || len(w.slot) > 0 || first && k.full || w.yielded && !woken
	k.full, w.yielded = false, false
	w.busy = !skip
	more = k.queue.Len() > 1
	b.mu.Unlock()
	return skip, more
}

// noteAnswer records what Redis answered the head w of k, its round trip
// done: w is no longer busy, and the refusal that waiters arriving behind it
// fail at once for (see failsAtOnce) is the new one, or none after a grant.
func (b *Redis) noteAnswer(k *rkey, w *rwaiter, v verdict, now time.Time, err error, more bool) {
	b.mu.Lock()
	w.busy = false
	if err == nil && v.ok {
		k.refused = nil
		if !more { // this process left the waiting queue
			k.full = false
		}
	} else if err == nil {
		k.refused = &refusal{v: v, now: now, seen: time.Now()}
	}
	b.mu.Unlock()
}

// reasonYielded is the acquire script's answer to a hand-over that left the
// slot to another process.
const reasonYielded Reason = 4

// errClosed is what a waiter gets when the backend is closed under it.
func errClosed() error { return fmt.Errorf("%w: closed", ErrUnavailable) }

// accept takes what a Release handed over: a lease, or a zero Lease when it
// got none. A lease the waiter can no longer use (ctx ended) is given back.
func (b *Redis) accept(ctx context.Context, l Lease, r Request) (Lease, bool) {
	if l.ID == "" {
		return Lease{}, false
	}
	if ctx.Err() != nil {
		b.giveBack(l, r)
		return Lease{}, false
	}
	return l, true
}

// attempt runs the acquire script once. A waiting head (queue) queues its
// process for a wake-up when refused a slot; granted, the process leaves that
// queue, or with requeue (more of its waiters wait) goes to its back. With a
// lease to release first (a hand-over), held reports whether that lease still
// held its slot.
func (b *Redis) attempt(ctx context.Context, r Request, take, queue bool, release string, requeue bool) (l Lease, v verdict, now time.Time, held bool, err error) {
	for range 2 {
		var h bool
		l, v, now, h, err = b.attemptOnce(ctx, r, take, queue, release, requeue)
		held = held || h
		if err != nil || v.reason != reasonLost {
			break
		}
		// Redis lost the key's state: write back what this process knows
		// before it takes more, then ask again.
		if err = b.restore(ctx, r.Key); err != nil {
			break
		}
	}
	if err == nil && v.reason == reasonLost {
		v = verdict{reason: ReasonConcurrency} // lost again at once: wait, and ask again
	}
	return l, v, now, held, err
}

// reasonLost is the acquire script's answer to a process that knew another
// epoch of the key: Redis lost the key's state.
const reasonLost Reason = 5

// attemptOnce runs the acquire script once (see attempt).
func (b *Redis) attemptOnce(ctx context.Context, r Request, take, queue bool, release string, requeue bool) (l Lease, v verdict, now time.Time, held bool, err error) {
	k := b.names(r.Key, r.Windows)
	keys := append([]string{k.holders, k.cooldown, k.waiting, k.epoch}, k.windows...)
	id := newLeaseID()
	epoch := ""
	if len(r.Windows) > 0 {
		epoch = b.ledger.epoch(r.Key)
	}
	conc := b.capped(r).Concurrency
	args := []any{id, conc, r.LeaseTTL().Milliseconds(), 0, "", release, b.wakePrefix, r.Key, 0, epoch, r.units()}
	if take {
		args[3] = 1
	}
	if requeue {
		args[8] = 1
	}
	if queue {
		args[4] = b.proc
	}
	for _, w := range r.Windows {
		args = append(args, w.Limit, w.Period.Milliseconds())
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	raw, err := b.acquire.Run(octx, b.rdb, keys, args...).Slice()
	if err != nil {
		return Lease{}, verdict{}, time.Time{}, false, err
	}
	res, told, err := parseAnswer(raw)
	if err != nil {
		return Lease{}, verdict{}, time.Time{}, false, err
	}
	if told != "" && Reason(res[1]) != reasonLost {
		b.ledger.learn(r.Key, told)
	}
	held = res[4] == 1
	if res[0] == 1 {
		l := Lease{Key: r.Key, ID: id, Granted: time.UnixMilli(res[1])}
		if res[2] > 0 {
			l.Expires, l.Concurrency = time.UnixMilli(res[2]), conc
		}
		b.ledger.add(r.Key, r.Windows, res[1], r.units())
		return l, verdict{ok: true}, l.Granted, held, nil
	}
	v = verdict{reason: Reason(res[1])}
	if res[2] > 0 {
		v.at = time.UnixMilli(res[2])
		if v.reason == ReasonCooldown {
			b.ledger.cooldown(r.Key, res[2])
		}
	}
	return Lease{}, v, time.UnixMilli(res[3]), held, nil
}

// parseAnswer reads the acquire script's answer: five integers, and the
// key's epoch when the process did not know it.
func parseAnswer(raw []any) (res [5]int64, epoch string, err error) {
	if len(raw) != 5 && len(raw) != 6 {
		return res, "", fmt.Errorf("throttle: acquire script answered %v", raw)
	}
	for i := range res {
		n, ok := raw[i].(int64)
		if !ok {
			return res, "", fmt.Errorf("throttle: acquire script answered %v", raw)
		}
		res[i] = n
	}
	if len(raw) == 6 {
		if epoch, _ = raw[5].(string); epoch == "" {
			return res, "", fmt.Errorf("throttle: acquire script answered %v", raw)
		}
	}
	return res, epoch, nil
}
