// The first step of an attempt: take the call's limits, under the limits
// learned from WeCom, then hand the call to the exchange holding them.

package wecom

import (
	"context"
	"errors"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// take takes the call's limits (acquire) and hands the call, holding
// them, to the exchange, which sends it unless the limits refused it. A
// daily or monthly count that is spent, when the client waits on rate limits and the
// caller's deadline allows it, and a lease lost during a long wait for
// another, ask the loop to take the limits again (tried.retake) rather
// than make an attempt. pending are learned-limit changes to report with
// this attempt.
func (p *pipeline) take(ctx context.Context, cl *call, el *endpointLimits, n int, pending []LimitChange) tried {
	start := time.Now()
	tell := func(s throttle.Stall) { p.stalls.tell(ctx, cl.path, s) }
	reqs := p.requests(cl, el, p.cfg.now())
	for i := range reqs {
		reqs[i].OnStall = tell
	}
	h, changes, lost, err := p.acquire(ctx, cl, reqs)
	changes = append(pending, changes...)
	var rl *RateLimitError
	if deadline, ok := ctx.Deadline(); errors.As(err, &rl) && rl.calendar != 0 && p.cfg.waitOnRateLimit && (!ok || !deadline.Before(time.Now().Add(rl.RetryAfter))) {
		var le *throttle.LimitError
		if errors.As(rl.Err, &le) {
			tell(throttle.Stall{Key: le.Key, Reason: le.Reason, Until: time.Now().Add(rl.RetryAfter)})
		}
		return tried{retake: true, wait: rl.RetryAfter, changes: changes, err: err}
	}
	if lost {
		return tried{retake: true, changes: changes}
	}
	a := Attempt{Method: cl.method, Path: cl.path, Number: n, LeaseWait: time.Since(start), LimitChanges: changes, Uncounted: cl.uncounted}
	return p.exchange(ctx, cl, el, h, a, err)
}
