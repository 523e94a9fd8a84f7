// The members script (lua/members.lua) behind a request with Members on the
// Redis backend: its KEYS and ARGV for a take, a refund and a restore, and
// its keyed answer.

package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// memberGen is the length of a generation of members' states (ms, about
// 70 minutes): a state lives in the HASH of the generation it was last
// written in (see lua/members.lua), so that a run reads one or two HASHes
// for the windows of WeCom's messages (an hour at most).
const memberGen = 1 << 22

// membersTTL returns how long a member's state must live after its last
// write for the windows ws (ms): as a window HASH does (lua/acquire.lua).
func membersTTL(ws []throttle.Window) int64 {
	ttl := int64(1000)
	for _, w := range ws {
		p := w.Period.Milliseconds()
		ttl = max(ttl, p+2*(p/throttle.BucketsPerWindow)+1000)
	}
	return ttl
}

// membersRun runs the members script op for the request key key, whose
// members' states must live ttl, with the ARGV that follow op's first four
// (see lua/members.lua), in generations of memberGen.
func (b *Backend) membersRun(ctx context.Context, key string, ttl int64, op string, args ...any) ([]any, error) {
	return b.membersRunIn(ctx, memberGen, key, ttl, op, args...)
}

// membersRunIn is membersRun in generations of gen ms. KEYS name the
// generations from the oldest a state may be in to the current one by this
// process's estimate of the server's clock, and one more on each side.
func (b *Backend) membersRunIn(ctx context.Context, gen int64, key string, ttl int64, op string, args ...any) ([]any, error) {
	k := b.names(key, nil)
	cur := b.ref.now().UnixMilli() / gen
	first := cur - (ttl+gen-1)/gen - 1
	keys := []string{k.epoch, k.cooldown}
	for g := first; g <= cur+1; g++ {
		keys = append(keys, k.members+strconv.FormatInt(g, 10))
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	defer b.quiet.begin()()
	return replySlice(b.members.run(octx, b.rdb, keys, append([]any{op, gen, first}, args...)...))
}

// attemptMembers is attemptOnce for a request with Members: one take of the
// members script. Its lease holds no slot: it only says when it was granted.
func (b *Backend) attemptMembers(ctx context.Context, a acquireArgs) (acquireResult, string, error) {
	r := a.r
	ref, maxAge := b.ref.deadline(b.opt.OpTimeout)
	args := make([]any, 0, 6+2*len(r.Windows)+len(r.Members))
	args = append(args, newLeaseID(), b.ledger.epoch(r.Key, true), r.Units(), ref, maxAge, len(r.Windows))
	for _, w := range r.Windows {
		args = append(args, w.Limit, w.Period.Milliseconds())
	}
	for _, m := range r.Members {
		args = append(args, m)
	}
	raw, err := b.membersRun(ctx, r.Key, membersTTL(r.Windows), "take", args...)
	if err != nil {
		return acquireResult{}, "", err
	}
	ans, err := parseMembersAnswer(raw, len(r.Members), len(r.Windows))
	if err != nil {
		return acquireResult{}, "", err
	}
	b.ref.saw(ans.now)
	if ans.epoch != "" && ans.reason != reasonLost {
		b.ledger.learn(r.Key, ans.epoch)
	}
	out := acquireResult{v: throttle.Verdict{OK: ans.reason == 0, Reason: ans.reason}, now: time.UnixMilli(ans.now)}
	units := 0
	if out.v.OK {
		units = r.Units()
		out.lease = throttle.Lease{Key: r.Key, ID: newLeaseID(), Granted: out.now}
	}
	b.ledger.add(r.Key, r.Members, r.Windows, ans.now, units, ans.fills)
	if ans.at > 0 {
		out.v.At = time.UnixMilli(ans.at)
		if ans.reason == throttle.ReasonCooldown {
			b.ledger.cooldown(r.Key, ans.at)
		}
	}
	for _, i := range ans.refused {
		out.v.Members = append(out.v.Members, r.Members[i-1])
	}
	return out, ans.epoch, nil
}

// membersAnswer is the members script's answer to a take.
type membersAnswer struct {
	reason  throttle.Reason // 0: granted
	now, at int64           // unix ms; at: when the refusal ends (0: unknown)
	epoch   string          // the request key's epoch, when the process did not know it
	refused []int           // the members without room, by place in the request (from 1)
	// fills: per member, per window, what it counted (buckets and reserve)
	// and took (see restore.lua); none when no member was read
	fills []int64
}

// membersReason returns the reason the members script names s ("": a
// grant), and false for a name it does not give.
func membersReason(s string) (throttle.Reason, bool) {
	switch s {
	case "":
		return 0, true
	case "rate":
		return throttle.ReasonRate, true
	case "reserve":
		return throttle.ReasonReserve, true
	case "cooldown":
		return throttle.ReasonCooldown, true
	case "lost":
		return reasonLost, true
	case "stale":
		return reasonStale, true
	}
	return 0, false
}

// parseMembersAnswer reads the members script's answer to a take of n
// members on nw windows (see lua/members.lua).
func parseMembersAnswer(raw []any, n, nw int) (membersAnswer, error) {
	bad := func(what string) (membersAnswer, error) {
		return membersAnswer{}, fmt.Errorf("throttle: members script answered %s", what)
	}
	if len(raw)%2 != 0 {
		return bad("an odd number of keys and values")
	}
	var a membersAnswer
	seen := 0
	for i := 0; i < len(raw); i += 2 {
		name, _ := raw[i].(string)
		var ok bool
		switch v := raw[i+1]; name {
		case "reason":
			s, isString := v.(string)
			a.reason, ok = membersReason(s)
			ok = ok && isString
		case "now":
			a.now, ok = v.(int64)
			ok = ok && a.now > 0
		case "at":
			a.at, ok = v.(int64)
		case "epoch":
			a.epoch, ok = v.(string)
		case "refused":
			var is []int64
			is, ok = int64s(v)
			for _, i := range is {
				ok = ok && i >= 1 && i <= int64(n)
				a.refused = append(a.refused, int(i))
			}
		case "fills":
			a.fills, ok = int64s(v)
			ok = ok && (len(a.fills) == 0 || len(a.fills) == n*nw)
		default:
			continue
		}
		if !ok {
			return bad(fmt.Sprintf("%s %v", name, raw[i+1]))
		}
		seen++
	}
	if seen != 6 {
		return bad(fmt.Sprintf("%d of its 6 keys", seen))
	}
	return a, nil
}

// int64s reads a list of integers of a script's answer (nil: empty).
func int64s(v any) ([]int64, bool) {
	l, ok := v.([]any)
	var out []int64
	for _, x := range l {
		n, isInt := x.(int64)
		if !isInt || n < 0 {
			return nil, false
		}
		out = append(out, n)
	}
	return out, ok
}

// restoreMember is restore for the member key key of the request key group:
// the members script's restore, with restore.lua's ARGV from the cooldown
// on (argv, see ledger.snapshot). It returns the epoch in force.
func (b *Backend) restoreMember(ctx context.Context, key, group, epoch string, ws []throttle.Window, argv []any) (string, error) {
	member, ok := strings.CutPrefix(key, throttle.MemberKey(group, ""))
	if !ok {
		return "", fmt.Errorf("throttle: member key %q is not of %q", key, group)
	}
	raw, err := b.membersRun(ctx, group, membersTTL(ws), "restore", append([]any{member, epoch, newLeaseID()}, argv...)...)
	if err != nil {
		return "", err
	}
	if len(raw) != 2 || raw[0] != "epoch" {
		return "", fmt.Errorf("throttle: members script answered %v to a restore", raw)
	}
	now, ok := raw[1].(string)
	if !ok {
		return "", fmt.Errorf("throttle: members script answered %v to a restore", raw)
	}
	return now, nil
}
