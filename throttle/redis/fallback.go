// What the Redis backend makes of a failed round trip (failed, errDown) and
// how it answers while Redis is down: from the in-process fallback (instead,
// share) or with ErrUnavailable, and how a call waits for it to answer again
// (outage, redisBack).

package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// failed classifies a Redis error. An outage (no connection, a timeout of the
// round trip itself, as the caller's cancellation never reaches it, or a
// server that says it cannot serve) marks Redis down for RetryRedisAfter; an
// error the server answered otherwise (refused) is returned as it is.
func (b *Backend) failed(op string, err error) (outage bool, _ error) {
	if refused(err) {
		return false, fmt.Errorf("throttle: redis %s: %w", op, err)
	}
	b.markDown()
	return true, fmt.Errorf("%w: %s: %w", throttle.ErrUnavailable, op, err)
}

// refused reports whether err is a reply of the server other than that it
// cannot serve now (a script error, say): it says nothing about reachability.
func refused(err error) bool {
	var rerr redisError
	return errors.As(err, &rerr) && !slices.ContainsFunc([]string{"LOADING", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "TRYAGAIN", "BUSY", "NOREPLICAS"},
		func(p string) bool { return strings.HasPrefix(rerr.Error(), p) })
}

// errDown is the error of a call refused at once while Redis is deemed down.
func (b *Backend) errDown() error {
	return fmt.Errorf("%w: Redis did not answer, and has not answered a probe since", throttle.ErrUnavailable)
}

// outage answers an acquisition of r that found Redis down (cause: the
// round trip that failed, or nil): from the fallback, under FallBackLocal
// or for a TryAcquire (try), else by waiting for Redis to answer again
// (redisBack), after which again says to ask it again.
func (b *Backend) outage(ctx context.Context, r throttle.Request, try bool, cause error) (l throttle.Lease, again bool, err error) {
	if try || b.opt.Fallback == FallBackLocal {
		l, err = b.instead(ctx, r, try, cause)
		return l, false, err
	}
	if err := b.redisBack(ctx, r.Key, r.OnStall, cause); err != nil {
		return throttle.Lease{}, false, err
	}
	return throttle.Lease{}, true, nil
}

// redisBack waits for Redis, known down, to answer a probe again, and tells
// f (if set) every StallAfter meanwhile that the call on key waits on it. It returns
// nil then, ctx's error if ctx ends first, or after Close errClosed, and
// once WaitForRedis has passed since Redis was found down an error
// matching ErrUnavailable (that of cause, the failed round trip, if any).
func (b *Backend) redisBack(ctx context.Context, key string, f throttle.StallFunc, cause error) error {
	b.mu.Lock()
	left := b.opt.WaitForRedis - time.Since(b.downAt)
	b.mu.Unlock()
	give := time.NewTimer(max(left, 0))
	defer give.Stop()
	tick := time.NewTicker(throttle.StallAfter)
	defer tick.Stop()
	for {
		b.mu.Lock()
		back, changed := b.health.Load() != healthDown, b.changed
		b.mu.Unlock()
		if back {
			return nil
		}
		select {
		case <-changed:
		case <-tick.C:
			if f != nil {
				f(throttle.Stall{Key: key, Reason: throttle.ReasonUnavailable})
			}
		case <-give.C:
			if cause == nil {
				cause = b.errDown()
			}
			return fmt.Errorf("%w; waited %s for Redis to answer", cause, b.opt.WaitForRedis)
		case <-ctx.Done():
			return ctx.Err()
		case <-b.done:
			return errClosed()
		}
	}
}

// instead answers an acquisition while Redis is down: from the local
// fallback, or with an error matching ErrUnavailable (fail closed).
func (b *Backend) instead(ctx context.Context, r throttle.Request, try bool, cause error) (throttle.Lease, error) {
	if b.opt.Fallback != FallBackLocal {
		return throttle.Lease{}, cmp.Or(cause, b.errDown())
	}
	acquire := b.local.Acquire
	if try {
		acquire = b.local.TryAcquire
	}
	l, err := acquire(ctx, b.share(r))
	if l.OwnSlot() {
		// The fleet's cap, not this process's share of it: what a refusal
		// of the call says about WeCom (see LimitStore) is about the fleet.
		l.Concurrency = b.capped(r).Concurrency
	}
	return fromLocal(l, err)
}

// share cuts r's limits to the process's share, for the fallback.
func (b *Backend) share(r throttle.Request) throttle.Request {
	cut := func(n int) int { return max(1, int(math.Floor(float64(n)*b.opt.LocalShare))) }
	if r.Concurrency > 0 {
		r.Concurrency = cut(r.Concurrency)
	}
	r.Windows, r.With = slices.Clone(r.Windows), slices.Clone(r.With)
	for i := range r.Windows {
		r.Windows[i].Limit = cut(r.Windows[i].Limit)
	}
	for i := range r.With {
		r.With[i] = b.share(r.With[i])
	}
	return r
}

// localLease marks leases of the fallback, so that Release routes them there.
const localLease = "local:"

// fromLocal marks a lease of the fallback, its With leases too.
func fromLocal(l throttle.Lease, err error) (throttle.Lease, error) {
	return relabel(l, func(id string) string { return localLease + id }), err
}

// toLocal undoes fromLocal.
func toLocal(l throttle.Lease) throttle.Lease {
	return relabel(l, func(id string) string { return strings.TrimPrefix(id, localLease) })
}

// relabel returns l with its ID, and its With leases', mapped by f.
func relabel(l throttle.Lease, f func(string) string) throttle.Lease {
	l.ID, l.With = f(l.ID), slices.Clone(l.With)
	for i := range l.With {
		l.With[i] = relabel(l.With[i], f)
	}
	return l
}
