package wecom

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// How a call's rules become lease requests and limiter keys. Rules that count the same calls (one
// scope, one group, one resource) share one limiter key and are taken by one
// throttle.Request: the in-flight cap and the windows of (corp, API) are one
// acquisition, as before the catalog. A calendar count (a natural day, a
// month) lives on a key named after its China Standard Time date or month,
// so it starts again when the next one starts there; weighted counts live on
// keys of their own.

// calendarWindow is the window of a calendar key of period p: an hour
// longer than any day or month, so that nothing counted on the key leaves
// it before the key is left for the next one's.
func calendarWindow(p catalog.Period) time.Duration { return p.Duration() + time.Hour }

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
func (p *pipeline) requests(cl *call, el *endpointLimits, now time.Time) []leaseRequest {
	var reqs []leaseRequest
	cool := p.coolKey(cl, el)
	for _, r := range el.rules {
		if r.Name == catalog.RuleFetch && cl.id == catalog.GetToken {
			continue // the token manager holds it around the whole fetch
		}
		if cl.counted && (r.CountsMembers() || r.Weighted) {
			continue // an earlier attempt counted them, and may have been done
		}
		key := p.ruleKey(cl, r, now)
		if key == "" {
			continue
		}
		i := slices.IndexFunc(reqs, func(q leaseRequest) bool { return q.Key == key })
		if i < 0 {
			reqs = append(reqs, leaseRequest{Request: throttle.Request{Key: key}, calendar: calendarOf(r), order: scopeOrder(r.Scope)})
			i = len(reqs) - 1
		}
		q := &reqs[i]
		if r.CountsMembers() {
			q.Members = p.memberKeys(cl.members)
		}
		switch {
		case r.InFlight > 0:
			q.Concurrency, q.TTL = r.InFlight, p.cfg.leaseTTL
		case r.Per.Calendar():
			q.Windows = append(q.Windows, throttle.Window{Limit: r.Limit, Period: calendarWindow(r.Per)})
		case r.Silent:
			q.Windows = append(q.Windows, throttle.Window{Limit: r.Limit, Period: r.Per.Duration() + silentMargin})
		default:
			q.Windows = append(q.Windows, throttle.Window{Limit: r.Limit, Period: r.Per.Duration()})
		}
		if r.Weighted {
			q.Weight = max(cl.weight, 1)
		}
		q.WaitCooldown = (key == cool || r.Scope == catalog.ScopeIP) && p.cfg.waitOnRateLimit
	}
	if !slices.ContainsFunc(reqs, func(q leaseRequest) bool { return q.Key == cool }) && cool == p.apiKey(cl.path) {
		// No rule counts the call on its API's key (auth/getuserinfo, which
		// WeCom counts in no window): the call still takes that key, with
		// neither slot nor window, to keep away while WeCom blocks the API
		// after a 45009.
		reqs = append(reqs, leaseRequest{Request: throttle.Request{Key: cool, WaitCooldown: p.cfg.waitOnRateLimit}, order: scopeOrder(catalog.ScopeAPI)})
	}
	slices.SortStableFunc(reqs, func(a, b leaseRequest) int { return cmp.Compare(a.order, b.order) })
	return reqs
}

// coolKey is the limiter key a 45009 on cl cools down: its API's key or,
// for an endpoint without an unweighted rule per corp and API (app
// messages, which do not count toward the base limits, and whose weighted
// counts live on keys of their own; a robot's messages), the key of its
// first rule per app, per member or per robot, which all its calls take.
func (p *pipeline) coolKey(cl *call, el *endpointLimits) string {
	if slices.ContainsFunc(el.rules, func(r catalog.Rule) bool { return r.Scope == catalog.ScopeAPI && !r.Weighted }) {
		return p.apiKey(cl.path)
	}
	for _, r := range el.rules {
		if (r.Scope == catalog.ScopeApp || r.CountsMembers() || r.Scope == catalog.ScopeRobot) && !r.Per.Calendar() && !r.Weighted {
			if key := p.ruleKey(cl, r, time.Time{}); key != "" {
				return key
			}
		}
	}
	return p.apiKey(cl.path)
}

// ipKey is the key of cl's per-IP windows and the longest of their
// periods; "" when it counts in none (no egress declared, or an endpoint
// without one).
func (p *pipeline) ipKey(cl *call, el *endpointLimits) (key string, longest time.Duration) {
	for _, r := range el.rules {
		if r.Scope == catalog.ScopeIP && r.IsRate() {
			key = p.ruleKey(cl, r, time.Time{})
			longest = max(longest, r.Per.Duration())
		}
	}
	return key, longest
}

// together folds the call's slot-only requests (a customer's lock, say)
// into its API's request as With slots, so that the limiter takes them with
// the API's slot in one step, all or nothing, and holds no API slot while a
// lock is busy. What cannot be a With slot (a count, a day or month, a
// weight) stays a request of its own.
func together(reqs []leaseRequest) []leaseRequest {
	p := slices.IndexFunc(reqs, func(q leaseRequest) bool { return q.order == scopeOrder(catalog.ScopeAPI) && q.calendar == 0 })
	if p < 0 {
		return reqs
	}
	out := make([]leaseRequest, 0, len(reqs))
	var with []throttle.Request
	api := 0 // the API's request in out
	for i, q := range reqs {
		if i != p && q.calendar == 0 && q.Concurrency > 0 && len(q.Windows) == 0 && q.Weight <= 1 && !q.WaitCooldown {
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
func (p *pipeline) memberKeys(ms []string) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = p.memberKey(m)
	}
	return distinctIDs(out)
}

// memberKey is member m as the limiter counts it: in lower case, as WeCom
// compares userids; a member of the client's own corp named as a linked
// corp's ("corpid/userid", as linkedcorp/message/send allows) as that
// userid, with the messages that name it alone.
func (p *pipeline) memberKey(m string) string {
	return strings.TrimPrefix(strings.ToLower(m), strings.ToLower(p.cfg.corpID)+"/")
}

// calendarOf returns the calendar period r counts in, 0 for none.
func calendarOf(r catalog.Rule) catalog.Period {
	if r.Per.Calendar() {
		return r.Per
	}
	return 0
}

// scopeOrder is the place of a rule's request among a call's: a
// resource's lock first, then the API, then the rest, and the per-IP
// windows last. The limiter takes the windows of one key per acquisition
// (and on Redis Cluster the per-IP key, shared by every corp, lives apart
// from the corp's slot), so the requests of a call are taken one by one,
// and a refusal gives back the slots taken, not the window units counted.
// Taken last, the per-IP unit, which every corp of the fleet shares, is
// counted only when every other limit of the call has admitted it; a
// refusal there leaves a unit counted in the call's own corp's windows,
// below WeCom's, never over.
func scopeOrder(s catalog.Scope) int {
	switch s {
	case catalog.ScopeResource, catalog.ScopeShared:
		return 0
	case catalog.ScopeAPI:
		return 1
	case catalog.ScopeIP:
		return 3
	}
	return 2
}

// ruleKey returns the limiter key rule r counts cl on, as the catalog
// forms it (catalog.Rule.Key), or "" when cl lacks what r's scope counts
// per (a resource, members, an egress).
func (p *pipeline) ruleKey(cl *call, r catalog.Rule, now time.Time) string {
	key, _ := r.Key(catalog.KeyInput{Corp: p.cfg.corpID, API: cl.path, App: p.app, Resource: cl.resource,
		Members: len(cl.members) > 0, Egress: p.cfg.egress, Now: now})
	return key
}

// corpTag is the corp id in braces, a Redis Cluster hash tag.
func (p *pipeline) corpTag() string { return "{" + p.cfg.corpID + "}" }

// apiKey is the limiter key of (corp, path), where its in-flight cap, its
// windows and its cooldown after a 45009 live.
func (p *pipeline) apiKey(path string) string {
	return p.ruleKey(&call{path: path}, catalog.Rule{Scope: catalog.ScopeAPI}, time.Time{})
}

// appID names the client's app in limiter keys (the pipeline keeps it as
// app): its agent id, or a digest of
// corp and secret when none was given.
func (p *pipeline) appID() string {
	if p.cfg.agentID > 0 {
		return strconv.Itoa(p.cfg.agentID)
	}
	if m := p.corp(); m != nil {
		return m.app
	}
	return "" // a robot: no app
}
