// What the Redis backend makes of a failed round trip (failed, errDown) and
// how it answers while Redis is down: from the in-process fallback (instead,
// share) or with ErrUnavailable.

package throttle

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
)

// failed classifies a Redis error. An outage (no connection, a timeout of the
// round trip itself, as the caller's cancellation never reaches it, or a
// server that says it cannot serve) marks Redis down for RetryRedisAfter; an
// error the server answered otherwise (a script error, say) is returned as
// it is, for it says nothing about reachability.
func (b *Redis) failed(op string, err error) (outage bool, _ error) {
	var rerr redisError
	if errors.As(err, &rerr) && !unavailableReply(rerr.Error()) {
		return false, fmt.Errorf("throttle: redis %s: %w", op, err)
	}
	b.markDown()
	return true, fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}

// errDown is the error of a call refused at once while Redis is deemed down.
func (b *Redis) errDown() error {
	return fmt.Errorf("%w: Redis did not answer, and has not answered a probe since", ErrUnavailable)
}

// unavailableReply reports whether a Redis error reply means the server
// cannot serve now, rather than that the command was wrong.
func unavailableReply(msg string) bool {
	for _, p := range []string{"LOADING", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "TRYAGAIN", "BUSY", "NOREPLICAS"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// instead answers an acquisition while Redis is down: from the local
// fallback, or with an error matching ErrUnavailable (fail closed).
func (b *Redis) instead(ctx context.Context, r Request, try bool, cause error) (Lease, error) {
	if b.opt.Fallback != FallBackLocal {
		if cause == nil {
			cause = b.errDown()
		}
		return Lease{}, cause
	}
	var l Lease
	var err error
	if try {
		l, err = b.local.TryAcquire(ctx, b.share(r))
	} else {
		l, err = b.local.Acquire(ctx, b.share(r))
	}
	if l.ownSlot() {
		// The fleet's cap, not this process's share of it: what a refusal
		// of the call says about WeCom (see LimitStore) is about the fleet.
		l.Concurrency = b.capped(r).Concurrency
	}
	return fromLocal(l, err)
}

// share cuts r's limits to the process's share, for the fallback.
func (b *Redis) share(r Request) Request {
	cut := func(n int) int { return max(1, int(math.Floor(float64(n)*b.opt.LocalShare))) }
	if r.Concurrency > 0 {
		r.Concurrency = cut(r.Concurrency)
	}
	ws := make([]Window, len(r.Windows))
	for i, w := range r.Windows {
		ws[i] = Window{Limit: cut(w.Limit), Period: w.Period}
	}
	r.Windows = ws
	if len(r.With) > 0 {
		with := make([]Request, len(r.With))
		for i, s := range r.With {
			with[i] = b.share(s)
		}
		r.With = with
	}
	return r
}

// localLease marks leases of the fallback, so that Release routes them there.
const localLease = "local:"

// fromLocal marks a lease of the fallback, its With leases too.
func fromLocal(l Lease, err error) (Lease, error) {
	l.ID = localLease + l.ID
	if len(l.With) > 0 {
		with := make([]Lease, len(l.With))
		for i, s := range l.With {
			with[i], _ = fromLocal(s, nil)
		}
		l.With = with
	}
	return l, err
}

// toLocal undoes fromLocal.
func toLocal(l Lease) Lease {
	l.ID = strings.TrimPrefix(l.ID, localLease)
	if len(l.With) > 0 {
		with := make([]Lease, len(l.With))
		for i, s := range l.With {
			with[i] = toLocal(s)
		}
		l.With = with
	}
	return l
}
