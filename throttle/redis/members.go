// Requests with Members on the Redis backend: one run of the members script
// (members_script.go) counts a request's windows on every member's windows,
// all or nothing, and another gives such a count back.

package redis

import (
	"context"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// restoreLost writes back what this process knows of r's key, or for a
// request with Members its members' keys, after Redis lost the key's state,
// whose epoch is now epoch.
func (b *Backend) restoreLost(ctx context.Context, r throttle.Request, epoch string) error {
	if len(r.Members) == 0 {
		return b.restore(ctx, r.Key)
	}
	for _, key := range b.ledger.keysWhere(func(rec *keyRecord) bool { return rec.group == r.Key }) {
		if err := b.restore(ctx, key); err != nil {
			return err
		}
	}
	b.ledger.learn(r.Key, epoch) // the members' keys learned it, not the request's
	return nil
}

// tryMembers is one attempt at r, a request with Members, for memberLines:
// on Redis, or on the fallback (whose answer, ok, ends the acquisition);
// while Redis is out it waits for it to answer (outage). A grant to a
// caller that has left is given back.
func (b *Backend) tryMembers(ctx context.Context, r throttle.Request) (throttle.Lease, throttle.Verdict, time.Time, error) {
	for { // again while Redis is out and answers again (outage)
		down, err := b.ready(ctx)
		if err != nil {
			return throttle.Lease{}, throttle.Verdict{}, time.Time{}, err
		}
		if down {
			if l, again, err := b.outage(ctx, r, false, nil); !again {
				return l, throttle.Verdict{OK: true}, time.Time{}, err
			}
			continue
		}
		res, err := b.attempt(ctx, acquireArgs{r: r, take: true})
		switch {
		case err != nil:
			if l, again, err := b.acquireFailed(ctx, r, false, err); !again {
				return l, throttle.Verdict{OK: true}, time.Time{}, err
			}
		case res.v.OK && ctx.Err() != nil:
			b.refundMembers(res.lease, r)
			return throttle.Lease{}, res.v, res.now, ctx.Err()
		default:
			return res.lease, res.v, res.now, nil
		}
	}
}

// refundMembers gives back the count of a lease of r that no call used (its
// caller gave up as it was granted), on every member's windows: the
// members script's refund.
func (b *Backend) refundMembers(l throttle.Lease, r throttle.Request) {
	granted := l.Granted.UnixMilli()
	args := make([]any, 0, 3+len(r.Windows)+len(r.Members))
	args = append(args, granted, r.Units(), len(r.Windows))
	for _, w := range r.Windows {
		args = append(args, w.Period.Milliseconds())
	}
	keys := make([]string, len(r.Members))
	for i, m := range r.Members {
		args = append(args, m)
		keys[i] = throttle.MemberKey(r.Key, m)
	}
	_, err := b.membersRun(context.Background(), r.Key, membersTTL(r.Windows), "refund", args...)
	if err == nil { // on failure counted until the windows slide past it: never over a limit
		b.ledger.remove(r.Windows, granted, r.Units(), keys...)
	}
}
