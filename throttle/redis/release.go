// Release, Extend and Cooldown on the Redis backend.

package redis

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// Release implements Backend: l's own slot, then its With leases (the next
// call need not wait for a lock's round trip). A waiter of this process for
// the key gets the slot at once: without Redis while no other process waits
// for it (handLocal), else in one round trip (handOver).
func (b *Backend) Release(ctx context.Context, l throttle.Lease) (err error) {
	with := l.With
	l.With = nil
	defer func() { err = cmp.Or(err, throttle.ReleaseEach(ctx, b, with)) }()
	if strings.HasPrefix(l.ID, localLease) {
		return b.local.Release(ctx, toLocal(l))
	}
	if !l.OwnSlot() {
		return nil
	}
	known, from, err := b.unhold(l)
	if err != nil {
		return err
	}
	letGo := known // on return: after a local hand-over counted its lease in
	defer func() {
		if letGo {
			b.letGo(l.Key)
		}
	}()
	if down, err := b.ready(ctx); err != nil || down {
		b.orphan(l) // released when Redis answers: no call waits or fails for it
		return err
	}
	if next, more := b.claimNext(l.Key); next != nil && isLockID(l.ID) != isLock(next.Req) {
		b.settle(l.Key, next, throttle.Lease{}, false, false) // the key in two shapes: next asks, l goes back below
	} else if next != nil {
		if known && b.handLocal(l, from, next) {
			return nil
		}
		return b.handOver(ctx, l, next, more)
	}
	if known && b.later(l) {
		letGo = false // when the release is sent
		return nil
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	held, err := b.releaseScript(octx, l, nil, 0)
	return b.released(l, held, err)
}

// released is what a release of l returns, from what its script answered:
// a failure for want of Redis keeps l to be released when Redis answers,
// and is no error.
func (b *Backend) released(l throttle.Lease, held bool, err error) error {
	switch {
	case err != nil:
		outage, err := b.failed("release", err)
		if outage {
			b.orphan(l)
			return nil
		}
		return err
	case !held:
		return throttle.ErrLeaseNotHeld
	}
	return nil
}

// Extend implements Backend.
func (b *Backend) Extend(ctx context.Context, l throttle.Lease, ttl time.Duration) (throttle.Lease, error) {
	if ttl < time.Millisecond {
		return l, invalidf("key %q: TTL %s under a millisecond", l.Key, ttl)
	}
	return throttle.ExtendAll(ctx, l, ttl, b.extendOne)
}

// extendOne extends the slot of l, which has no With leases.
func (b *Backend) extendOne(ctx context.Context, l throttle.Lease, ttl time.Duration) (throttle.Lease, error) {
	if strings.HasPrefix(l.ID, localLease) {
		return fromLocal(b.local.Extend(ctx, toLocal(l), ttl))
	}
	b.mu.Lock()
	_, ok := b.ownsLocked(l)
	b.mu.Unlock()
	if !ok {
		return l, throttle.ErrLeaseNotHeld
	}
	exp, err := b.extendScript(ctx, l, ttl)
	switch {
	case err != nil:
		return l, err
	case exp == 0:
		return l, throttle.ErrLeaseNotHeld
	}
	l.Expires = time.UnixMilli(exp)
	b.mu.Lock()
	if h := b.heldOf(l); h != nil && h.id == l.ID {
		h.until = l.Expires
	}
	b.mu.Unlock()
	return l, nil
}

// extendScript runs the extend script for l's slot and returns its answer:
// the new expiry (unix ms), or 0 when the slot is not held. While Redis is
// out it waits for Redis to answer again, as Acquire does (redisBack).
func (b *Backend) extendScript(ctx context.Context, l throttle.Lease, ttl time.Duration) (int64, error) {
	k := b.names(l.Key, nil)
	for {
		down, err := b.ready(ctx)
		if err != nil {
			return 0, err
		}
		var cause error // the round trip that failed, if any
		if !down {
			octx, cancel := b.opCtx(ctx)
			exp, err := replyInt64(b.extend.run(octx, b.rdb, []string{k.slots(l.ID), k.cooldown}, redisID(l.ID), ttl.Milliseconds()))
			cancel()
			if err == nil {
				return exp, nil
			}
			out, err := b.failed("extend", err)
			if !out {
				return 0, err
			}
			cause = err
		}
		if err := b.redisBack(ctx, l.Key, nil, cause); err != nil {
			return 0, err
		}
	}
}

// Cooldown implements Backend.
func (b *Backend) Cooldown(ctx context.Context, key string, d time.Duration) error {
	if key == "" {
		return invalidf("empty key")
	}
	if d <= 0 {
		return nil
	}
	down, err := b.ready(ctx)
	if err != nil {
		return err
	}
	if !down {
		octx, cancel := b.opCtx(ctx)
		defer cancel()
		var end int64
		k := b.names(key, nil)
		if end, err = replyInt64(b.cooldown.run(octx, b.rdb, []string{k.cooldown, k.lock}, max(1, d.Milliseconds()), b.channel, key)); err == nil {
			b.ledger.cooldown(key, end)
			b.dropBlock(key)
			return nil
		}
	}
	// Keep this process off the API at least, and Redis once it answers.
	_ = b.local.Cooldown(ctx, key, d)
	b.ledger.cooldown(key, time.Now().Add(d).UnixMilli())
	if down {
		return b.errDown()
	}
	_, err = b.failed("cooldown", err)
	return err
}

// releaseScript runs the release script for l's own slot, if any, and its
// With leases, which share its hash tag (later.go), refunding units
// in windows (nil: none). held: every lease still held its slot.
func (b *Backend) releaseScript(ctx context.Context, l throttle.Lease, windows []throttle.Window, units int) (held bool, err error) {
	k := b.names(l.Key, windows)
	keys := append(make([]string, 0, 3+len(windows)+3*len(l.With)), k.slots(l.ID), k.waiting, k.cooldown)
	id, granted := "", int64(0)
	if l.OwnSlot() || len(windows) > 0 {
		id = redisID(l.ID)
	}
	if len(windows) > 0 {
		keys, granted = append(keys, k.windows...), l.Granted.UnixMilli()
	}
	args := []any{id, b.wakePrefix, l.Key, granted, units, len(l.With)}
	for _, w := range windows {
		args = append(args, w.Period.Milliseconds())
	}
	for _, s := range l.With {
		sk := b.names(s.Key, nil)
		keys = append(keys, sk.slots(s.ID), sk.waiting, sk.cooldown)
		args = append(args, redisID(s.ID), s.Key)
	}
	defer b.quiet.begin()()
	n, err := replyInt64(b.release.run(ctx, b.rdb, keys, args...))
	return n == 1, err
}
