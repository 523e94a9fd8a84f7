// Requests with Members on the Redis backend: one run of the members script
// (lua/members.lua) counts a request's windows on every member's windows,
// all or nothing, or gives such a count back.

package throttle

import (
	"context"
	"fmt"
	"time"
)

// membersAnswer is the members script's answer, field for field in this
// order (see lua/members.lua, Returns).
type membersAnswer struct {
	reason  Reason
	now, at int64
	epoch   string
	fills   []int64
	refused []int64 // places in the request, from 1
}

// runMembers runs the members script once for r, giving back the count
// granted at refund (unix ms) when it is not 0.
func (b *Redis) runMembers(ctx context.Context, r Request, refund int64) (membersAnswer, error) {
	g := b.names(r.Key, nil)
	keys := append(make([]string, 0, 2+len(r.Members)*len(r.Windows)), g.epoch, g.cooldown)
	tag := hashTag(r.Key)
	for _, m := range r.Members {
		keys = append(keys, b.namesIn(tag, MemberKey(r.Key, m), r.Windows).windows...)
	}
	ref, maxAge := b.ref.deadline(b.opt.OpTimeout)
	args := []any{newLeaseID(), b.ledger.groupEpoch(r.Key), r.units(), refund, ref, maxAge, len(r.Windows)} // see lua/members.lua
	for _, w := range r.Windows {
		args = append(args, w.Limit, w.Period.Milliseconds())
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	defer b.quiet.begin()()
	raw, err := replySlice(b.members.run(octx, b.rdb, keys, args...))
	if err != nil {
		return membersAnswer{}, err
	}
	return parseMembersAnswer(raw, len(r.Members), len(r.Windows))
}

// attemptMembers is attempt for a request with Members: after Redis lost the
// key's state it writes back every member before it asks again.
func (b *Redis) attemptMembers(ctx context.Context, r Request) (acquireResult, error) {
	defer stallAfter(ctx, r.Key)()
	for try := 0; ; try++ {
		ans, err := b.runMembers(ctx, r, 0)
		if err != nil {
			return acquireResult{}, err
		}
		b.ref.saw(ans.now)
		now := time.UnixMilli(ans.now)
		if ans.reason == reasonLost && try == 0 {
			b.mu.Lock()
			b.newEra()
			b.mu.Unlock()
			for _, key := range b.ledger.grouped(r.Key) {
				if err := b.restore(ctx, key); err != nil {
					return acquireResult{}, err
				}
			}
			b.ledger.learn(r.Key, ans.epoch)
			continue
		}
		if ans.epoch != "" && ans.reason != reasonLost {
			b.ledger.learn(r.Key, ans.epoch)
		}
		switch ans.reason {
		case 0:
			b.ledger.addMembers(r.Key, r.Members, r.Windows, ans.now, r.units(), ans.fills)
			return acquireResult{lease: Lease{Key: r.Key, ID: newLeaseID(), Granted: now}, v: verdict{ok: true}, now: now}, nil
		case reasonLost, reasonStale: // lost again at once, or run late: wait, and ask again
			return acquireResult{v: verdict{reason: ReasonConcurrency}, now: now}, nil
		}
		b.ledger.addMembers(r.Key, r.Members, r.Windows, ans.now, 0, ans.fills)
		v := verdict{reason: ans.reason}
		if ans.at > 0 {
			v.at = time.UnixMilli(ans.at)
		}
		for _, i := range ans.refused {
			v.members = append(v.members, r.Members[i-1])
		}
		return acquireResult{v: v, now: now}, nil
	}
}

// tryMembers is one attempt at r, a request with Members, for memberLines:
// on Redis, or on the fallback (whose answer, ok, ends the acquisition). A
// grant to a caller that has left is given back.
func (b *Redis) tryMembers(ctx context.Context, r Request) (Lease, verdict, time.Time, error) {
	down, err := b.ready(ctx)
	if err != nil {
		return Lease{}, verdict{}, time.Time{}, err
	}
	var l Lease
	if down {
		l, err = b.instead(ctx, r, false, nil)
		return l, verdict{ok: true}, time.Time{}, err
	}
	res, err := b.attemptMembers(ctx, r)
	if err != nil {
		l, err = b.acquireFailed(ctx, r, false, err)
		return l, verdict{ok: true}, time.Time{}, err
	}
	if res.v.ok && ctx.Err() != nil {
		b.refundMembers(res.lease, r)
		return Lease{}, res.v, res.now, ctx.Err()
	}
	return res.lease, res.v, res.now, nil
}

// refundMembers gives back the count of a lease of r that no call used (its
// caller gave up as it was granted).
func (b *Redis) refundMembers(l Lease, r Request) {
	if _, err := b.runMembers(context.Background(), r, l.Granted.UnixMilli()); err != nil {
		return // counted until the windows slide past it: never over a limit
	}
	keys := make([]string, len(r.Members))
	for i, m := range r.Members {
		keys[i] = MemberKey(r.Key, m)
	}
	b.ledger.remove(r.Windows, l.Granted.UnixMilli(), r.units(), keys...)
}

// parseMembersAnswer reads the members script's answer (see membersAnswer)
// to a request of members and windows.
func parseMembersAnswer(raw []any, members, windows int) (membersAnswer, error) {
	bad := func() (membersAnswer, error) {
		return membersAnswer{}, fmt.Errorf("throttle: members script answered %v", raw)
	}
	ints := func(x any, into *[]int64) bool { // a list of counts
		xs, ok := x.([]any)
		for _, x := range xs {
			n, isInt := x.(int64)
			ok = ok && isInt && n >= 0
			*into = append(*into, n)
		}
		return ok
	}
	var head []int64
	a := membersAnswer{}
	if len(raw) != 6 || !ints(raw[:3], &head) || !ints(raw[4], &a.fills) || !ints(raw[5], &a.refused) {
		return bad()
	}
	a.reason, a.now, a.at = Reason(head[0]), head[1], head[2]
	var ok bool
	if a.epoch, ok = raw[3].(string); !ok || a.now == 0 || len(a.fills) != 0 && len(a.fills) != members*windows {
		return bad()
	}
	for _, i := range a.refused {
		if i < 1 || i > int64(members) {
			return bad()
		}
	}
	return a, nil
}
