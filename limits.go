package wecom

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// Limits changes the default limits of one endpoint (see WithLimits and
// DefaultLimits). A field left zero keeps the default; NoLimit removes the
// limit; a positive value sets it, adding the limit when the endpoint has
// none.
type Limits struct {
	// Concurrency caps the calls in flight per corp and API
	// (catalog.RuleInFlight).
	Concurrency int
	// PerResource caps the calls in flight per resource of the endpoint:
	// the customer of mark_tag and remark (catalog.RuleCustomer, shared by
	// the APIs that edit a customer: New fails unless it is changed on each
	// of them alike).
	PerResource int
	// PerMinute, PerHour, PerDay and PerMonth cap the calls started per
	// corp and API in a sliding minute, a sliding hour, and a natural day
	// and a calendar month of China Standard Time (catalog.RulePerMinute,
	// catalog.RulePerHour, catalog.RulePerDay, catalog.RulePerMonth).
	PerMinute, PerHour, PerDay, PerMonth int
	// BlockFor is how long the API is left alone after WeCom answers 45009.
	// By default it is the length of the window WeCom blocks for, a minute,
	// an hour, or the rest of the CST day or month: the shortest the API is limited
	// in, and the next longer one when a 45009 comes right after a block
	// (WeCom does not say which window was exceeded).
	BlockFor time.Duration
}

// NoLimit, as a field of Limits, removes that limit.
const NoLimit = -1

// ruleDay is the name of a per-corp daily limit set through Limits.PerDay.
const ruleDay = catalog.RulePerDay

// DefaultLimits returns the documented limits of an API path: those the
// catalog declares for the endpoints the SDK wraps (catalog.Endpoints), and
// WeCom's limits for every API (catalog.Generic) for any other path.
func DefaultLimits(path string) []catalog.Rule {
	if e, ok := catalog.Lookup(path); ok {
		return e.Rules
	}
	return catalog.Generic()
}

// apply returns rules changed by l, for endpoint e (whose Resource says
// whether a per-resource limit makes sense).
func (l Limits) apply(e catalog.Endpoint, rules []catalog.Rule) ([]catalog.Rule, error) {
	set := func(name string, n int, r catalog.Rule) error {
		i := slices.IndexFunc(rules, func(r catalog.Rule) bool { return r.Name == name })
		switch {
		case n == 0:
		case n == NoLimit && i >= 0:
			rules = slices.Delete(rules, i, i+1)
		case n == NoLimit:
		case n < 0:
			return invalid("limits "+string(e.ID), "%s %d: give a positive number, 0 (keep the default) or NoLimit", name, n)
		case i >= 0 && rules[i].IsRate():
			rules[i].Limit, rules[i].Source = n, "overridden"
		case i >= 0:
			rules[i].InFlight, rules[i].Source = n, "overridden"
		default:
			r.Name, r.Source = name, "overridden"
			rules = append(rules, r)
		}
		return nil
	}
	if l.PerResource > 0 && e.Resource == "" {
		return nil, invalid("limits "+string(e.ID), "PerResource on an endpoint without a resource")
	}
	if l.BlockFor < 0 {
		return nil, invalid("limits "+string(e.ID), "negative BlockFor %s", l.BlockFor)
	}
	rules = slices.Clone(rules)
	resource := catalog.RuleCustomer
	for _, err := range []error{
		set(catalog.RuleInFlight, l.Concurrency, catalog.Rule{Scope: catalog.ScopeAPI, InFlight: l.Concurrency}),
		set(resource, l.PerResource, catalog.Rule{Scope: catalog.ScopeResource, InFlight: l.PerResource}),
		set(catalog.RulePerMinute, l.PerMinute, catalog.Rule{Scope: catalog.ScopeAPI, Limit: l.PerMinute, Per: catalog.Minute}),
		set(catalog.RulePerHour, l.PerHour, catalog.Rule{Scope: catalog.ScopeAPI, Limit: l.PerHour, Per: catalog.Hour}),
		set(ruleDay, l.PerDay, catalog.Rule{Scope: catalog.ScopeAPI, Limit: l.PerDay, Per: catalog.Day}),
		set(catalog.RulePerMonth, l.PerMonth, catalog.Rule{Scope: catalog.ScopeAPI, Limit: l.PerMonth, Per: catalog.Month}),
	} {
		if err != nil {
			return nil, err
		}
	}
	return rules, nil
}

// endpointLimits is an endpoint as the client applies it: its catalog entry
// (zero for a path Do calls that the catalog does not declare) and its rules
// after overrides, resolved once by New.
type endpointLimits struct {
	ep       catalog.Endpoint
	rules    []catalog.Rule
	blockFor time.Duration // 0: the window's (see Client.block)
}

// rule returns the rule named name.
func (el *endpointLimits) rule(name string) (catalog.Rule, bool) {
	for _, r := range el.rules {
		if r.Name == name {
			return r, true
		}
	}
	return catalog.Rule{}, false
}

// periods returns the windows the API is limited in per corp, shortest
// first (a minute when it has none).
func (el *endpointLimits) periods() []catalog.Period {
	var ps []catalog.Period
	for _, r := range el.rules {
		if r.IsRate() && r.Scope == catalog.ScopeAPI && !slices.Contains(ps, r.Per) {
			ps = append(ps, r.Per)
		}
	}
	if len(ps) == 0 {
		return []catalog.Period{catalog.Minute}
	}
	slices.Sort(ps)
	return ps
}

// override is what the limit options asked for one path, kept until New
// resolves it against the catalog.
type override struct {
	limits  Limits
	rules   []catalog.Rule   // added or replaced, by name
	without []string         // rules removed, by name
	keys    catalog.KeysFunc // WithKeys
}

// counted fails, naming the rule, when a rule of cl's endpoint counts what
// cl does not say: the resource it edits, the members it reaches, or its
// units. Such a call would go out counted against none of them.
func counted(cl *call, rules []catalog.Rule) error {
	for _, r := range rules {
		what := ""
		switch need := r.Scope.Need(); {
		case cl.resource == "" && (need == catalog.NeedResource || need == catalog.NeedRobot):
			what = "the resource a call edits"
		case len(cl.members) == 0 && len(cl.uncounted) == 0 && need == catalog.NeedMembers:
			what = "the members a call reaches"
		case cl.weight == 0 && r.Weighted:
			what = "the units a call counts"
		}
		if what != "" {
			return invalid("limits", "%s: its limit %q (%s) counts %s, which the call does not say", cl.path, r.Name, r, what)
		}
	}
	return nil
}

// resolve applies the override to el.
func (o *override) resolve(el *endpointLimits) error {
	path := string(el.ep.ID)
	rules, err := o.limits.apply(el.ep, el.rules)
	if err != nil {
		return err
	}
	for _, name := range o.without {
		i := slices.IndexFunc(rules, func(r catalog.Rule) bool { return r.Name == name })
		if i < 0 {
			return invalid("limits "+path, "no rule %q to remove (it has %s)", name, ruleNames(rules))
		}
		rules = slices.Delete(rules, i, i+1)
	}
	for _, r := range o.rules {
		rules = slices.DeleteFunc(rules, func(old catalog.Rule) bool { return old.Name == r.Name })
		rules = append(rules, r)
	}
	if err := catalog.ValidateRules(rules); err != nil {
		return invalid("limits "+path, "%v", err)
	}
	if o.keys != nil {
		if el.ep.Method != "" {
			return invalid("limits "+path, "the SDK wraps it and reads its keys itself")
		}
		el.ep.Keys = o.keys
	}
	if i := slices.IndexFunc(rules, catalog.Rule.NeedsKeys); i >= 0 && el.ep.Keys == nil {
		return invalid("limits "+path, "rule %q (%s) counts what a request says (a resource, its members or its units), and nothing reads it: give a catalog.KeysFunc with WithKeys", rules[i].Name, rules[i])
	}
	el.rules, el.blockFor = rules, o.limits.BlockFor
	return nil
}

func ruleNames(rules []catalog.Rule) string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = fmt.Sprintf("%q", r.Name)
	}
	return strings.Join(names, ", ")
}

// nearEndpoint returns the wrapped endpoint that path is a slip or two away
// from (letters changed, missing, added or swapped; another case; a missing
// /cgi-bin prefix; a trailing slash), or "" if none is.
func nearEndpoint(path string) string {
	norm := func(p string) string {
		p = strings.TrimSuffix(strings.ToLower(p), "/")
		if !strings.HasPrefix(p, "/cgi-bin/") {
			p = "/cgi-bin" + p
		}
		return p
	}
	for _, e := range catalog.Endpoints() {
		if p := string(e.ID); editDistance(norm(path), p, 2) <= 2 {
			return p
		}
	}
	return ""
}

const nearCacheSize = 1024

// editDistance returns the number of letters changed, added, removed or
// swapped with their neighbour that make a into b (optimal string alignment
// distance), or more than most once it knows it exceeds most.
func editDistance(a, b string, most int) int {
	if d := len(a) - len(b); d > most || -d > most {
		return most + 1
	}
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		low := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			low = min(low, cur[j])
		}
		if low > most {
			return most + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// DefaultLeaseTTL is how long a concurrency slot outlives a process that died
// holding it. Live calls renew their slots, however long they take.
const DefaultLeaseTTL = 15 * time.Second
