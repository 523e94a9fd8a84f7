// The first step of an attempt: take the call's limits. Its leases are
// taken in order, all or none, under the limits learned from WeCom, and
// renewed until the attempt settles them.

package wecom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// taken is what the take step hands on.
type taken struct {
	leases []throttle.Lease
	// slot is the cap its API's slot was granted under.
	slot apiSlot
	// stop stops renewing the leases (keepAlive); nil when none were taken.
	stop func()
	// changes are the learned-limit changes to report.
	changes []LimitChange
	err     error
	// retake: nothing is held; the loop takes the limits again after wait
	// (a daily count spent, the next CST day waited for), or at once (an
	// earlier lease expired during a long wait for a later one).
	retake bool
	wait   time.Duration
}

// take takes the call's leases in order, giving back those taken if one
// fails. An earlier lease's TTL runs while the call waits for a later one,
// so after a long wait the earlier ones are renewed; one that expired
// meanwhile (another call may hold its slot now) makes the call take them
// again. A daily count that is spent makes the call wait for the next CST
// day when the client waits on rate limits and the caller's deadline
// allows it. The leases are renewed from then on, until the attempt
// settles them, however long the credential and the answer take.
func (p *pipeline) take(ctx context.Context, cl *call, el *endpointLimits) (t taken) {
	ctx = p.stallContext(ctx, cl.path)
	reqs := p.requests(cl, el, p.cfg.now())
	t.slot, t.changes = p.adapt(ctx, cl, reqs)
	var firstAt time.Time
	t.leases, firstAt, t.err = p.acquireAll(ctx, cl, together(reqs))
	var rl *RateLimitError
	if errors.As(t.err, &rl) && rl.day && p.cfg.waitOnRateLimit && !deadlineBefore(ctx, time.Now().Add(rl.RetryAfter)) {
		var le *throttle.LimitError
		if errors.As(rl.Err, &le) {
			p.stalled(ctx, cl.path, throttle.Stall{Key: le.Key, Reason: le.Reason, Until: time.Now().Add(rl.RetryAfter)})
		}
		t.retake, t.wait = true, rl.RetryAfter
		return t
	}
	if t.err != nil {
		return t
	}
	t.slot = p.granted(cl, t.slot, t.leases)
	if len(t.leases) > 1 && time.Since(firstAt) >= p.cfg.leaseTTL/4 {
		lost, err := p.renewEarlier(ctx, t.leases)
		if err != nil || lost {
			p.release(ctx, t.leases)
			t.leases, t.retake = nil, lost
			if err != nil {
				t.err = p.limitError(cl.path, false, err)
			}
			return t
		}
	}
	t.stop = p.keepAlive(ctx, t.leases)
	return t
}

// acquireAll takes every request, or none. firstAt is when the first was
// granted, by the local clock.
func (p *pipeline) acquireAll(ctx context.Context, cl *call, reqs []leaseRequest) (leases []throttle.Lease, firstAt time.Time, err error) {
	leases = make([]throttle.Lease, 0, len(reqs))
	for _, r := range reqs {
		var l throttle.Lease
		if r.day || (cl.tryMembers && len(r.Members) > 0) {
			l, err = p.cfg.limiter.TryAcquire(ctx, r.Request)
		} else {
			l, err = p.cfg.limiter.Acquire(ctx, r.Request)
		}
		if err != nil {
			p.release(ctx, leases)
			return nil, firstAt, p.asNamed(p.limitError(cl.path, r.day, err), cl.members)
		}
		if len(leases) == 0 {
			firstAt = time.Now()
		}
		leases = append(leases, l)
	}
	return leases, firstAt, nil
}

// limitError turns a limiter refusal into the client's error. A refusal of
// a day key lasts until the next midnight in China Standard Time.
func (p *pipeline) limitError(path string, day bool, err error) error {
	var le *throttle.LimitError
	if errors.As(err, &le) {
		rl := &RateLimitError{Path: path, RetryAfter: le.RetryAfter, Err: le, Members: le.Members}
		if day && (le.Reason == throttle.ReasonRate || le.Reason == throttle.ReasonReserve) {
			now := p.cfg.now()
			rl.RetryAfter, rl.day = catalog.NextDay(now).Sub(now), true
		}
		return rl
	}
	return fmt.Errorf("wecom: %s: waiting for the limiter: %w", path, err)
}

// deadlineBefore reports whether ctx ends before at.
func deadlineBefore(ctx context.Context, at time.Time) bool {
	d, ok := ctx.Deadline()
	return ok && d.Before(at)
}
