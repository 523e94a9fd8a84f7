package wecom

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// How a call's rules become leases. Rules that count the same calls (one
// scope, one group, one resource) share one limiter key and are taken by one
// throttle.Request: the in-flight cap and the windows of (corp, API) are one
// acquisition, as before the catalog. A natural-day count lives on a key
// named after its China Standard Time date, so it starts again at midnight
// there; weighted counts live on keys of their own.

// leaseRequest is one acquisition of a call.
type leaseRequest struct {
	throttle.Request
	// day: the key counts a CST day. It is taken without waiting; when
	// full, it opens at the next midnight there.
	day bool
	// order: scarcer keys first, so that no API slot is held while the call
	// waits for a busy customer.
	order int
}

// dayWindow is the window of a day key: longer than any day, so that
// nothing counted on the key leaves it before the key is left for the next
// day's.
const dayWindow = 25 * time.Hour

// silentMargin lengthens the windows of the rules over which WeCom drops
// without an error (catalog.Rule.Silent): a call is counted when its lease
// is granted, WeCom counts it when it arrives, and a message that took
// longer on its way than the one sent a window later would land in that
// one's window. With the windows' buckets it absorbs a difference of
// arrival lag of about 1.5 s (TestMessageLateArrival); a message held up
// longer on its way can still let a later one over WeCom's window.
const silentMargin = time.Second

// requests returns the acquisitions of a call limited by el at now, in the
// order they are taken.
func (c *Client) requests(cl *call, el *endpointLimits, now time.Time) []leaseRequest {
	var reqs []leaseRequest
	cool := c.coolKey(cl, el)
	for _, r := range el.rules {
		if r.Name == catalog.RuleFetch && cl.id == catalog.GetToken {
			continue // the token manager holds it around the whole fetch
		}
		if cl.counted && (r.CountsMembers() || r.Weighted) {
			continue // an earlier attempt counted them, and may have been done
		}
		for _, key := range c.ruleKeys(cl, r, now) {
			i := slices.IndexFunc(reqs, func(q leaseRequest) bool { return q.Key == key })
			if i < 0 {
				reqs = append(reqs, leaseRequest{Request: throttle.Request{Key: key}, day: r.Per == catalog.Day, order: scopeOrder(r.Scope)})
				i = len(reqs) - 1
			}
			q := &reqs[i]
			if r.CountsMembers() {
				q.Members = c.memberKeys(cl.members)
			}
			switch {
			case r.InFlight > 0:
				q.Concurrency, q.TTL = r.InFlight, c.leaseTTL()
			case r.Per == catalog.Day:
				q.Windows = append(q.Windows, throttle.Window{Limit: r.Limit, Period: dayWindow})
			case r.Silent:
				q.Windows = append(q.Windows, throttle.Window{Limit: r.Limit, Period: r.Per.Duration() + silentMargin})
			default:
				q.Windows = append(q.Windows, throttle.Window{Limit: r.Limit, Period: r.Per.Duration()})
			}
			if r.Weighted {
				q.Weight = max(cl.weight, 1)
			}
			q.WaitCooldown = key == cool && c.waitOnRateLimit
		}
	}
	slices.SortStableFunc(reqs, func(a, b leaseRequest) int { return cmp.Compare(a.order, b.order) })
	return reqs
}

// coolKey is the limiter key a 45009 on cl cools down: its API's key or,
// for an endpoint without an unweighted rule per corp and API (app
// messages, which do not count toward the base limits, and whose weighted
// counts live on keys of their own; a robot's messages), the key of its
// first rule per app, per member or per robot, which all its calls take.
func (c *Client) coolKey(cl *call, el *endpointLimits) string {
	if slices.ContainsFunc(el.rules, func(r catalog.Rule) bool { return r.Scope == catalog.ScopeAPI && !r.Weighted }) {
		return c.apiKey(cl.path)
	}
	for _, r := range el.rules {
		if (r.Scope == catalog.ScopeApp || r.CountsMembers() || r.Scope == catalog.ScopeRobot) && r.Per != catalog.Day && !r.Weighted {
			if keys := c.ruleKeys(cl, r, time.Time{}); len(keys) > 0 {
				return keys[0]
			}
		}
	}
	return c.apiKey(cl.path)
}

// together folds the call's slot-only requests (a customer's lock, say)
// into its API's request as With slots, so that the limiter takes them with
// the API's slot in one step, all or nothing, and holds no API slot while a
// lock is busy. What cannot be a With slot (a count, a day, a weight) stays
// a request of its own.
func together(reqs []leaseRequest) []leaseRequest {
	p := slices.IndexFunc(reqs, func(q leaseRequest) bool { return q.order == scopeOrder(catalog.ScopeAPI) && !q.day })
	if p < 0 {
		return reqs
	}
	out := make([]leaseRequest, 0, len(reqs))
	var with []throttle.Request
	api := 0 // the API's request in out
	for i, q := range reqs {
		if i != p && !q.day && q.Concurrency > 0 && len(q.Windows) == 0 && q.Weight <= 1 && !q.WaitCooldown {
			with = append(with, q.Request)
			continue
		}
		if i == p {
			api = len(out)
		}
		out = append(out, q)
	}
	if len(with) == 0 {
		return reqs
	}
	out[api].With = with
	return out
}

// memberKeys returns the members a call reaches as the limiter counts them
// (memberKey), each once.
func (c *Client) memberKeys(ms []string) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = c.memberKey(m)
	}
	return distinctIDs(out)
}

// memberKey is member m as the limiter counts it: in lower case, as WeCom
// compares userids; a member of the client's own corp named as a linked
// corp's ("corpid/userid", as linkedcorp/message/send allows) as that
// userid, with the messages that name it alone.
func (c *Client) memberKey(m string) string {
	return strings.TrimPrefix(strings.ToLower(m), strings.ToLower(c.corpID)+"/")
}

// asNamed rewrites the members a *RateLimitError in err names, which the
// limiter counts by memberKey, as the call named them.
func (c *Client) asNamed(err error, members []string) error {
	var rl *RateLimitError
	if !errors.As(err, &rl) || len(rl.Members) == 0 {
		return err
	}
	named := make(map[string]string, len(members))
	for _, m := range members {
		if k := c.memberKey(m); named[k] == "" {
			named[k] = m
		}
	}
	for i, k := range rl.Members {
		if m := named[k]; m != "" {
			rl.Members[i] = m
		}
	}
	return err
}

func scopeOrder(s catalog.Scope) int {
	switch s {
	case catalog.ScopeResource, catalog.ScopeShared:
		return 0
	case catalog.ScopeAPI:
		return 1
	}
	return 2
}

// ruleKeys returns the limiter keys rule r counts a call on: none when the
// call lacks what the scope counts per (a resource, members, an egress).
// Within a corp, keys start with the corp's hash tag (corpTag): one corp's
// keys share a Redis Cluster slot, different corps spread.
func (c *Client) ruleKeys(cl *call, r catalog.Rule, now time.Time) []string {
	corp := c.corpTag()
	shared := r.Group
	if shared == "" {
		shared = cl.path
	}
	var keys []string
	switch r.Scope {
	case catalog.ScopeAPI:
		keys = []string{c.apiKey(cl.path)}
	case catalog.ScopeResource:
		if cl.resource != "" {
			keys = []string{corp + cl.path + "|" + cl.resource}
		}
	case catalog.ScopeShared:
		if cl.resource != "" {
			keys = []string{corp + "@" + r.Group + "|" + cl.resource}
		}
	case catalog.ScopeApp:
		keys = []string{corp + "#" + c.appID() + "@" + shared}
	case catalog.ScopeAppMember: // one request, counted on each member (throttle.MemberKey)
		if len(cl.members) > 0 {
			keys = []string{corp + "#" + c.appID() + "@" + shared}
		}
	case catalog.ScopeMember: // as ScopeAppMember, across the corp's apps
		if len(cl.members) > 0 {
			keys = []string{corp + "@" + shared}
		}
	case catalog.ScopeIP:
		if c.egress != "" {
			keys = []string{"ip:" + c.egress + cl.path}
		}
	case catalog.ScopeRobot:
		if cl.resource != "" {
			sum := sha256.Sum256([]byte(cl.resource)) // a robot's key is a credential
			keys = []string{"robot:" + hex.EncodeToString(sum[:8])}
		}
	}
	suffix := ""
	if r.Weighted {
		suffix += "~units"
	}
	if r.Per == catalog.Day {
		suffix += "~day:" + catalog.DayOf(now)
	}
	for i := range keys {
		keys[i] += suffix
	}
	return keys
}

// corpTag is the corp id in braces, a Redis Cluster hash tag.
func (c *Client) corpTag() string { return "{" + c.corpID + "}" }

// apiKey is the limiter key of (corp, path), where its in-flight cap, its
// windows and its cooldown after a 45009 live.
func (c *Client) apiKey(path string) string { return c.corpTag() + path }

// appID names the client's app in limiter keys: its agent id, or a digest of
// corp and secret when none was given.
func (c *Client) appID() string {
	if c.agentID > 0 {
		return strconv.Itoa(c.agentID)
	}
	return c.tokens.app
}

// acquire takes the call's leases in order, giving back those taken if one
// fails, and returns the cap its API's slot was granted under and the
// learned-limit changes to report. An earlier lease's TTL runs while the call waits for a later one, so
// after a long wait the earlier ones are renewed; one that expired meanwhile
// (another call may hold its slot now) makes the call start over. A daily
// count that is spent makes the call wait for the next CST day when the
// client waits on rate limits and the caller's deadline allows it.
func (c *Client) acquire(ctx context.Context, cl *call, el *endpointLimits) ([]throttle.Lease, apiSlot, []LimitChange, error) {
	ctx = c.stallContext(ctx, cl.path)
	var changes []LimitChange
	for {
		reqs := c.requests(cl, el, c.now())
		slot, ch := c.adapt(ctx, cl, reqs)
		changes = append(changes, ch...)
		leases, firstAt, err := c.acquireAll(ctx, cl, together(reqs))
		var rl *RateLimitError
		if errors.As(err, &rl) && rl.day && c.waitOnRateLimit && !deadlineBefore(ctx, time.Now().Add(rl.RetryAfter)) {
			var le *throttle.LimitError
			if errors.As(rl.Err, &le) {
				c.stalled(ctx, cl.path, throttle.Stall{Key: le.Key, Reason: le.Reason, Until: time.Now().Add(rl.RetryAfter)})
			}
			if werr := sleep(ctx, rl.RetryAfter); werr != nil {
				return nil, apiSlot{}, changes, fmt.Errorf("wecom: %s: %w (waiting for the next CST day after: %w)", cl.path, werr, rl)
			}
			continue
		}
		if err != nil {
			return nil, apiSlot{}, changes, err
		}
		slot = c.granted(cl, slot, leases)
		if len(leases) < 2 || time.Since(firstAt) < c.leaseTTL()/4 {
			return leases, slot, changes, nil
		}
		lost, err := c.renewEarlier(ctx, leases)
		if err != nil {
			c.release(ctx, leases)
			return nil, apiSlot{}, changes, c.limitError(cl.path, false, err)
		}
		if !lost {
			return leases, slot, changes, nil
		}
		c.release(ctx, leases)
	}
}

// acquireAll takes every request, or none. firstAt is when the first was
// granted, by the local clock.
func (c *Client) acquireAll(ctx context.Context, cl *call, reqs []leaseRequest) (leases []throttle.Lease, firstAt time.Time, err error) {
	leases = make([]throttle.Lease, 0, len(reqs))
	for _, r := range reqs {
		var l throttle.Lease
		if r.day || (cl.tryMembers && len(r.Members) > 0) {
			l, err = c.limiter.TryAcquire(ctx, r.Request)
		} else {
			l, err = c.limiter.Acquire(ctx, r.Request)
		}
		if err != nil {
			c.release(ctx, leases)
			return nil, firstAt, c.asNamed(c.limitError(cl.path, r.day, err), cl.members)
		}
		if len(leases) == 0 {
			firstAt = time.Now()
		}
		leases = append(leases, l)
	}
	return leases, firstAt, nil
}

// renewEarlier renews the slots of every lease but the last after a long
// wait. lost reports one that expired meanwhile. A lease that holds no slot
// (a window count, a day count) has nothing to renew.
func (c *Client) renewEarlier(ctx context.Context, leases []throttle.Lease) (lost bool, err error) {
	for i := range leases[:len(leases)-1] {
		if !leases[i].HoldsSlot() {
			continue
		}
		l, err := c.limiter.Extend(ctx, leases[i], c.leaseTTL())
		if errors.Is(err, throttle.ErrLeaseNotHeld) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		leases[i] = l
	}
	return false, nil
}

// keepAlive renews the leases' slots every half TTL until the returned stop
// is called, so that a call slower than the TTL keeps them. It starts no
// goroutine until the first renewal is due, and none outlives stop.
func (c *Client) keepAlive(ctx context.Context, leases []throttle.Lease) (stop func()) {
	var (
		mu      sync.Mutex
		stopped bool
		running sync.WaitGroup
		t       *time.Timer
	)
	ttl := c.leaseTTL()
	renew := func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		running.Add(1)
		mu.Unlock()
		defer running.Done()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl/2)
		defer cancel()
		for _, l := range leases {
			if !l.HoldsSlot() {
				continue
			}
			if _, err := c.limiter.Extend(rctx, l, ttl); err != nil {
				c.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: lease renewal failed", slog.String("key", l.Key), slog.String("error", err.Error()))
			}
		}
		mu.Lock()
		if !stopped {
			t.Reset(ttl / 2)
		}
		mu.Unlock()
	}
	mu.Lock()
	t = time.AfterFunc(ttl/2, renew)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
		running.Wait()
	}
}

// release gives leases back, even when ctx is already cancelled.
func (c *Client) release(ctx context.Context, leases []throttle.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for i := len(leases) - 1; i >= 0; i-- {
		if err := c.limiter.Release(rctx, leases[i]); err != nil {
			c.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: lease release failed", slog.String("key", leases[i].Key), slog.String("error", err.Error()))
		}
	}
}

// limitError turns a limiter refusal into the client's error. A refusal of
// a day key lasts until the next midnight in China Standard Time.
func (c *Client) limitError(path string, day bool, err error) error {
	var le *throttle.LimitError
	if errors.As(err, &le) {
		rl := &RateLimitError{Path: path, RetryAfter: le.RetryAfter, Err: le, Members: le.Members}
		if day && (le.Reason == throttle.ReasonRate || le.Reason == throttle.ReasonReserve) {
			now := c.now()
			rl.RetryAfter, rl.day = catalog.NextDay(now).Sub(now), true
		}
		return rl
	}
	return fmt.Errorf("wecom: %s: waiting for the limiter: %w", path, err)
}
