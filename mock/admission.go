package mock

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// How the Server enforces the catalog's rules, every scope alike: a rule
// counts a call on the key catalog.Rule.Key forms for its scope (per corp
// and API, per resource, per app, per app and member, per robot, per source
// IP), from what the endpoint's catalog.KeysFunc reads of the request: the
// key and the function the client counts with. A new rule is enforced the
// day it is declared. A rule of a calendar period (a CST day, a CST month)
// counts on a key named after the day or month the call arrives in, so its
// count starts again when the next one starts, as WeCom's does.

// limit is one rule of a route as the Server enforces it: the calls in
// flight per key (45033 over it) or its rate windows per key (45009, and
// the key blocked for the window's period). Rules of one scope and group
// share a limit: WeCom's minute and hour of one API are one key.
type limit struct {
	scope    catalog.Scope
	group    string
	inFlight int
	windows  []Window
	weighted bool
	// per is the calendar period (catalog.Day, catalog.Month) whose key
	// the limit counts on; 0 for the sliding windows.
	per catalog.Period
	// silent: over the windows WeCom answers success and drops the call
	// for the key's member (catalog.Rule.Silent): see dropped.
	silent bool
}

// limitKey names what one limit counts for one call: the key of its rule
// as the client's limiter names it (catalog.Rule.Key) and, for a limit
// that counts members, the member.
type limitKey struct {
	scope catalog.Scope
	key   string
	who   string
}

// rateLog is the sliding log of one key: a time per unit counted.
type rateLog struct {
	calls        []time.Time // sorted
	blockedUntil time.Time
}

// admission is what one admitted call holds in flight.
type admission struct{ keys []limitKey }

// limits returns the route's limits from its rules and cfg. A calendar
// rule is a limit of its own, whose one window outlasts its period on a key
// named after the day or month: the count leaves the key only when the
// key is left for the next one's. cfg.Windows replaces the sliding windows
// per corp and API, not the calendar ones.
func limits(rules []catalog.Rule, cfg Config) []limit {
	var ls []limit
	at := func(r catalog.Rule) *limit {
		per := catalog.Period(0)
		if r.Per.Calendar() {
			per = r.Per
		}
		i := slices.IndexFunc(ls, func(l limit) bool {
			return l.scope == r.Scope && l.group == r.Group && l.weighted == r.Weighted && l.silent == r.Silent && l.per == per
		})
		if i < 0 {
			ls = append(ls, limit{scope: r.Scope, group: r.Group, weighted: r.Weighted, silent: r.Silent, per: per})
			i = len(ls) - 1
		}
		return &ls[i]
	}
	for _, r := range rules {
		switch {
		case r.InFlight > 0 && r.Scope == catalog.ScopeAPI:
			at(r).inFlight = override(cfg.Concurrency, r.InFlight)
		case r.InFlight > 0 && (r.Scope == catalog.ScopeResource || r.Scope == catalog.ScopeShared):
			at(r).inFlight = override(cfg.PerCustomerConcurrency, r.InFlight)
		case r.InFlight > 0:
			at(r).inFlight = r.InFlight
		case r.Per.Calendar():
			l := at(r)
			l.windows = append(l.windows, Window{Limit: r.Limit, Period: r.Per.Duration() + time.Hour})
		case r.Scope == catalog.ScopeAPI && cfg.Windows != nil:
		case r.Scope == catalog.ScopeIP && cfg.IPWindows != nil:
		default:
			l := at(r)
			l.windows = append(l.windows, Window{Limit: r.Limit, Period: r.Per.Duration()})
		}
	}
	if cfg.Windows != nil {
		l := at(catalog.Rule{Scope: catalog.ScopeAPI})
		l.windows = cfg.Windows
	}
	if cfg.IPWindows != nil {
		l := at(catalog.Rule{Scope: catalog.ScopeIP})
		l.windows = cfg.IPWindows
	}
	return slices.DeleteFunc(ls, func(l limit) bool { return l.inFlight == 0 && len(l.windows) == 0 })
}

// keysOf returns the keys l counts a call of rt on, with keys what the
// request says (ok false: it does not say it, and no key of a scope that
// needs it applies: the handler refuses such a request anyway).
func (l limit) keysOf(rt *route, c *corp, tok *token, ip string, keys catalog.Keys, ok bool, now time.Time) []limitKey {
	in := catalog.KeyInput{Corp: c.id, API: string(rt.ID), App: tok.app, Egress: ip, Now: now}
	if ok {
		in.Resource, in.Members = keys.Resource, len(keys.Members) > 0
	}
	key, lacks := catalog.Rule{Scope: l.scope, Group: l.group, Weighted: l.weighted, Per: l.per}.Key(in)
	if lacks != catalog.NeedNothing {
		return nil
	}
	if l.scope.Need() != catalog.NeedMembers {
		return []limitKey{{scope: l.scope, key: key}}
	}
	out := make([]limitKey, 0, len(keys.Members))
	for _, m := range keys.Members { // userids compare without case
		out = append(out, limitKey{scope: l.scope, key: key, who: strings.ToLower(m)})
	}
	return out
}

// counted is one key of a call with its limit.
type counted struct {
	limit
	key limitKey
}

// countedKeys returns every key the route's limits count the call on, and
// the units it counts in weighted ones, for a call arriving at now.
func countedKeys(rt *route, c *corp, tok *token, ip string, in *input, now time.Time) (cs []counted, units int) {
	var keys catalog.Keys
	ok := false
	if rt.Keys != nil && !in.bodyErr {
		k, err := rt.Keys(in.query, in.body)
		keys, ok = k, err == nil
	}
	if ok && keys.Chat != "" { // an app group chat's message counts the chat's members
		keys.Members = c.appChatMembers(keys.Chat)
		keys.Weight, ok = len(keys.Members), len(keys.Members) > 0
	}
	ls := rt.limits
	if strings.HasPrefix(tok.app, suiteTarget("")) { // a corp token from get_corp_token
		ls = rt.thirdParty
	}
	for _, l := range ls {
		for _, k := range l.keysOf(rt, c, tok, ip, keys, ok, now) {
			cs = append(cs, counted{l, k})
		}
	}
	if !slices.ContainsFunc(cs, func(ck counted) bool { return ck.scope == catalog.ScopeAPI }) {
		// counted in flight for Stats.MaxInFlight, under no cap
		key, _ := catalog.Rule{Scope: catalog.ScopeAPI}.Key(catalog.KeyInput{Corp: c.id, API: string(rt.ID)})
		cs = append(cs, counted{key: limitKey{scope: catalog.ScopeAPI, key: key}})
	}
	return cs, keys.Weight
}

// admitRate counts the call in the windows of every key, or reports false
// when a key is blocked or the call would exceed a window of it (which
// blocks that key for the window's period); a refused call counts nowhere.
// s.mu must be held.
func (s *Server) admitRate(cs []counted, units int, now time.Time) bool {
	refused := false
	for _, ck := range cs {
		if len(ck.windows) == 0 || ck.silent {
			continue
		}
		n := 1
		if ck.weighted {
			n = max(units, 1)
		}
		rl := s.rates[ck.key]
		if rl == nil {
			rl = &rateLog{}
			s.rates[ck.key] = rl
		}
		refused = !rl.admits(ck.windows, n, now) || refused
	}
	if refused {
		return false
	}
	for _, ck := range cs {
		if len(ck.windows) > 0 && !ck.silent {
			n := 1
			if ck.weighted {
				n = max(units, 1)
			}
			s.rates[ck.key].add(now, n)
		}
	}
	return true
}

// dropped counts the call on the keys of its silent limits that have room
// at now and returns the members (who) of those that have none: WeCom
// answers success and drops the call for them, counting nothing. s.mu
// must be held.
func (s *Server) dropped(cs []counted, now time.Time) map[string]bool {
	var over map[string]bool
	for _, ck := range cs {
		if !ck.silent || len(ck.windows) == 0 {
			continue
		}
		rl := s.rates[ck.key]
		if rl == nil {
			rl = &rateLog{}
			s.rates[ck.key] = rl
		}
		if rl.fits(ck.windows, 1, now) {
			rl.add(now, 1)
			continue
		}
		if over == nil {
			over = make(map[string]bool)
		}
		over[ck.key.who] = true
	}
	return over
}

// fits reports whether n more units fit every window at now.
func (rl *rateLog) fits(ws []Window, n int, now time.Time) bool {
	rl.trim(ws, now)
	end := rl.after(now)
	for _, w := range ws {
		if end-rl.after(now.Add(-w.Period))+n > w.Limit {
			return false
		}
	}
	return true
}

// trim forgets the units no window of ws counts at now.
func (rl *rateLog) trim(ws []Window, now time.Time) {
	longest := time.Duration(0)
	for _, w := range ws {
		longest = max(longest, w.Period)
	}
	rl.calls = rl.calls[rl.after(now.Add(-longest)):]
}

// admits reports whether n more units fit every window at now, and blocks
// the log for the period of each window they would exceed.
func (rl *rateLog) admits(ws []Window, n int, now time.Time) bool {
	if now.Before(rl.blockedUntil) {
		return false
	}
	longest := time.Duration(0)
	for _, w := range ws {
		longest = max(longest, w.Period)
	}
	rl.calls = rl.calls[rl.after(now.Add(-longest)):]
	end := rl.after(now) // calls in (now-Period, now] are [after(now-Period), end)
	ok := true
	for _, w := range ws {
		if end-rl.after(now.Add(-w.Period))+n > w.Limit {
			ok = false
			rl.blockedUntil = maxTime(rl.blockedUntil, now.Add(w.Period))
		}
	}
	return ok
}

// after returns the index of the first unit counted later than t.
func (rl *rateLog) after(t time.Time) int {
	return sort.Search(len(rl.calls), func(i int) bool { return rl.calls[i].After(t) })
}

// add counts n units at now.
func (rl *rateLog) add(now time.Time, n int) {
	i := rl.after(now)
	rl.calls = slices.Insert(rl.calls, i, slices.Repeat([]time.Time{now}, n)...)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// admit takes the call's slots in flight on every key, or none and refuses
// it with 45033. s.mu must be held.
func (s *Server) admit(rt *route, cs []counted) (admission, *apiError) {
	var adm admission
	for _, ck := range cs {
		if ck.inFlight > 0 && s.inFlight[ck.key] >= ck.inFlight {
			return admission{}, errf(catalog.CodeConcurrencyLimited, "api concurrent out of limit")
		}
	}
	for _, ck := range cs {
		if ck.inFlight == 0 && ck.key.scope != catalog.ScopeAPI {
			continue
		}
		s.inFlight[ck.key]++
		adm.keys = append(adm.keys, ck.key)
		if ck.key.scope == catalog.ScopeAPI {
			s.stats.MaxInFlight[string(rt.ID)] = max(s.stats.MaxInFlight[string(rt.ID)], s.inFlight[ck.key])
		}
	}
	return adm, nil
}

// release gives back the slots taken by admit.
func (s *Server) release(adm admission) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range adm.keys {
		if s.inFlight[k]--; s.inFlight[k] <= 0 {
			delete(s.inFlight, k)
		}
	}
}

// appOf names an app of a corp by its secret, which no key holds.
func appOf(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:6])
}
