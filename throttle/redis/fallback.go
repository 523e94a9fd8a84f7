// What the Redis backend makes of a failed round trip (failed, errDown) and
// how it answers while Redis is down: from the in-process fallback (instead,
// share) or with ErrUnavailable.

package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

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
