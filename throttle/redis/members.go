// Requests with Members on the Redis backend: one run of the acquire script
// counts a request's windows on every member's windows, all or nothing, and
// the release script gives such a count back.

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
// caller gave up as it was granted): the release script's refund, on every
// member's windows, with no slot to release.
func (b *Backend) refundMembers(l throttle.Lease, r throttle.Request) {
	k, granted := b.names(r.Key, nil), l.Granted.UnixMilli()
	keys, args := []string{k.holders, k.waiting, k.cooldown}, []any{"", b.wakePrefix, r.Key, granted, r.Units(), 0}
	members := make([]string, len(r.Members))
	for i, m := range r.Members {
		members[i] = throttle.MemberKey(r.Key, m)
		keys = append(keys, b.namesIn(hashTag(r.Key), members[i], r.Windows).windows...)
		for _, w := range r.Windows {
			args = append(args, w.Period.Milliseconds())
		}
	}
	octx, cancel := b.opCtx(context.Background())
	defer cancel()
	defer b.quiet.begin()()
	if _, err := b.release.run(octx, b.rdb, keys, args...); err == nil { // on failure counted until the windows slide past it: never over a limit
		b.ledger.remove(r.Windows, granted, r.Units(), members...)
	}
}
