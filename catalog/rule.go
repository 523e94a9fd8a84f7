package catalog

import (
	"errors"
	"fmt"
	"time"
)

// Scope says what one rule counts per: which calls share its count.
type Scope int

// The scopes of a rule. Every scope is within one corp except ScopeIP and
// ScopeRobot.
const (
	// ScopeAPI counts per corp and API: WeCom's base limits, and the calls
	// in flight of data-heavy APIs.
	ScopeAPI Scope = iota + 1
	// ScopeResource counts per corp, API and resource (a customer, a member,
	// a media id), as the endpoint's Resource names it.
	ScopeResource
	// ScopeShared counts per corp and resource across every API whose rule
	// names the same Group: a customer edited by mark_tag must not be edited
	// by remark at the same time.
	ScopeShared
	// ScopeApp counts per app (agent): across the APIs naming the same
	// Group, or per API when Group is empty.
	ScopeApp
	// ScopeAppMember counts per app and member: one count per member a call
	// reaches.
	ScopeAppMember
	// ScopeIP counts per source IP and API, across every corp served from
	// that IP. The client applies it only when told the fleet's egress
	// (wecom.WithEgress): the per-corp limits are lower, so a fleet serving
	// one corp never reaches it.
	ScopeIP
	// ScopeRobot counts per group robot (webhook key).
	ScopeRobot
	// ScopeMember counts per corp and member, across the corp's apps: one
	// count per member a call reaches (what a member receives in app group
	// chats, whichever app sends it).
	ScopeMember
)

// String names the scope.
func (s Scope) String() string {
	switch s {
	case ScopeAPI:
		return "per corp and API"
	case ScopeResource:
		return "per corp, API and resource"
	case ScopeShared:
		return "per corp and resource, shared"
	case ScopeApp:
		return "per app"
	case ScopeAppMember:
		return "per app and member"
	case ScopeIP:
		return "per source IP and API"
	case ScopeRobot:
		return "per robot"
	case ScopeMember:
		return "per corp and member"
	}
	return fmt.Sprintf("Scope(%d)", int(s))
}

func (s Scope) valid() bool { return s >= ScopeAPI && s <= ScopeMember }

// countsMembers reports whether the scope counts per member a call reaches.
func (s Scope) countsMembers() bool { return s == ScopeAppMember || s == ScopeMember }

// CountsMembers reports whether r counts once per member a call reaches
// (ScopeAppMember, ScopeMember).
func (r Rule) CountsMembers() bool { return r.Scope.countsMembers() }

// needsResource reports whether the scope counts per resource of a call.
func (s Scope) needsResource() bool { return s == ScopeResource || s == ScopeShared }

// needsGroup reports whether rules of the scope must name a Group.
func (s Scope) needsGroup() bool { return s == ScopeShared }

// Period is the window of a rate rule.
type Period int

// The windows WeCom counts calls in.
const (
	// Minute is a sliding minute. WeCom blocks an API for 60 s after its
	// per-minute limit is exceeded.
	Minute Period = iota + 1
	// Hour is a sliding hour; a block lasts an hour.
	Hour
	// Day is a natural day in China Standard Time (UTC+8); a block lasts
	// until the next midnight there.
	Day
	// Month is a calendar month in China Standard Time: its count starts
	// again at 00:00 CST on the first of the next month, when a block
	// ends.
	Month
)

// String names the period.
func (p Period) String() string {
	switch p {
	case Minute:
		return "minute"
	case Hour:
		return "hour"
	case Day:
		return "day (CST)"
	case Month:
		return "month (CST)"
	}
	return fmt.Sprintf("Period(%d)", int(p))
}

// Duration returns the length of a sliding period; for a calendar one, its
// longest: 24 hours for Day, 31 days for Month.
func (p Period) Duration() time.Duration {
	switch p {
	case Minute:
		return time.Minute
	case Hour:
		return time.Hour
	case Day:
		return 24 * time.Hour
	case Month:
		return 31 * 24 * time.Hour
	}
	return 0
}

// Calendar reports whether the period is a calendar one (Day, Month): its
// count lives on a key named after the CST day or month it holds
// (Rule.Key), rather than in a sliding window.
func (p Period) Calendar() bool { return p == Day || p == Month }

// Next returns the start of the calendar period after the one holding t
// (NextDay, NextMonth); t itself for a sliding period.
func (p Period) Next(t time.Time) time.Time {
	switch p {
	case Day:
		return NextDay(t)
	case Month:
		return NextMonth(t)
	}
	return t
}

// name returns the name of the calendar period holding t, as its keys
// carry it ("day:20261127", "month:202611"); "" for a sliding period.
func (p Period) name(t time.Time) string {
	switch p {
	case Day:
		return "day:" + DayOf(t)
	case Month:
		return "month:" + MonthOf(t)
	}
	return ""
}

// BlockAt returns when a block that WeCom imposes at t, for exceeding a limit
// of this period, ends: a minute or an hour later, or the start of the next
// day or month in China Standard Time.
func (p Period) BlockAt(t time.Time) time.Time {
	if p.Calendar() {
		return p.Next(t)
	}
	return t.Add(p.Duration())
}

// cst is China Standard Time, which has had no daylight saving since 1991.
// A fixed zone needs no time zone database on the machine.
func cst() *time.Location { return time.FixedZone("CST", 8*60*60) }

// DayOf returns the China Standard Time date of t, as "20061102": the name of
// WeCom's natural day holding t.
func DayOf(t time.Time) string { return t.In(cst()).Format("20060102") }

// NextDay returns the first instant of the China Standard Time day after
// the one holding t: when WeCom's daily counts start again.
func NextDay(t time.Time) time.Time {
	y, m, d := t.In(cst()).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, cst())
}

// MonthOf returns the China Standard Time month of t, as "200601": the name
// of WeCom's calendar month holding t.
func MonthOf(t time.Time) string { return t.In(cst()).Format("200601") }

// NextMonth returns the first instant of the China Standard Time month after
// the one holding t: when WeCom's monthly counts start again.
func NextMonth(t time.Time) time.Time {
	y, m, _ := t.In(cst()).Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, cst())
}

// Rule is one limit: a scope and a cap. A rule caps either the calls in
// flight (InFlight) or the calls started per period (Limit and Per), never
// both.
type Rule struct {
	// Name identifies the rule within an endpoint, for overrides. The
	// catalog's names are the RuleXxx constants.
	Name string
	// Scope says which calls share the rule's count.
	Scope Scope
	// Group names what ScopeShared and ScopeApp rules share across APIs:
	// rules of several endpoints with the same scope and Group count
	// together.
	Group string
	// InFlight caps the calls in flight at once (WeCom answers 45033 over
	// it).
	InFlight int
	// Limit caps the calls (or units, see Weighted) started per Per (WeCom
	// answers 45009 over it).
	Limit int
	// Per is the window Limit counts in.
	Per Period
	// Weighted: a call counts as many units as it says (a message to N
	// members counts N) rather than one. Only for rate rules.
	Weighted bool
	// Silent: WeCom does not refuse a call over the rule: it answers
	// success and drops what goes over, unseen (app messages beyond a
	// member's 30 a minute). The SDK keeps under it as under any rate
	// rule; a server that plays WeCom (the mock) drops rather than
	// refuses. Only for rate rules.
	Silent bool
	// Source says where the number comes from: an official page, a staff
	// answer.
	Source string
}

// IsRate reports whether the rule caps calls per period (rather than in
// flight).
func (r Rule) IsRate() bool { return r.Limit > 0 }

// String describes the rule in a few words, as "5 in flight per corp and
// API" or "10000/minute per corp and API".
func (r Rule) String() string {
	var s string
	if r.IsRate() {
		s = fmt.Sprintf("%d/%s %s", r.Limit, r.Per, r.Scope)
		if r.Weighted {
			s = fmt.Sprintf("%d units/%s %s", r.Limit, r.Per, r.Scope)
		}
	} else {
		s = fmt.Sprintf("%d in flight %s", r.InFlight, r.Scope)
	}
	if r.Group != "" {
		s += " (" + r.Group + ")"
	}
	return s
}

// ErrInvalidRule matches the errors of malformed rules.
var ErrInvalidRule = errors.New("invalid limit rule")

// Validate reports whether r is well formed. Its errors match
// ErrInvalidRule.
func (r Rule) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("rule %q: %s: %w", r.Name, fmt.Sprintf(format, args...), ErrInvalidRule)
	}
	switch {
	case r.Name == "":
		return bad("no name")
	case !r.Scope.valid():
		return bad("unknown scope %d", int(r.Scope))
	case r.Scope.needsGroup() && r.Group == "":
		return bad("%s needs a Group", r.Scope)
	case r.InFlight < 0 || r.Limit < 0:
		return bad("negative cap")
	case (r.InFlight > 0) == (r.Limit > 0):
		return bad("caps either InFlight or Limit per period, exactly one")
	case r.Limit > 0 && (r.Per < Minute || r.Per > Month):
		return bad("Limit %d needs a period (Minute, Hour, Day or Month)", r.Limit)
	case r.InFlight > 0 && (r.Per != 0 || r.Weighted || r.Silent):
		return bad("an InFlight cap has no period, no weight and is not silent")
	}
	return nil
}

// ValidateRules validates every rule of a list, and the list: names are
// distinct, and for each scope and group at most one rule caps the calls in
// flight and at most one the calls per period, as each shares one count.
func ValidateRules(rules []Rule) error {
	names := make(map[string]bool, len(rules))
	seen := make(map[string]bool)
	for _, r := range rules {
		if err := r.Validate(); err != nil {
			return err
		}
		if names[r.Name] {
			return fmt.Errorf("rule %q: named twice: %w", r.Name, ErrInvalidRule)
		}
		names[r.Name] = true
		k := fmt.Sprint(r.Scope, "|", r.Group, "|", r.Per, "|", r.Weighted)
		if seen[k] {
			return fmt.Errorf("rule %q: a second cap of its kind %s: %w", r.Name, r.Scope, ErrInvalidRule)
		}
		seen[k] = true
	}
	return nil
}
