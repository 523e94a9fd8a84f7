package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// withClock sets the clock that names CST days and times blocks.
func withClock(now func() time.Time) Option {
	return func(c *config) error {
		c.now = now
		return nil
	}
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

// Now returns the clock's time.
func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

// Set sets it.
func (f *fakeClock) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = t
}

// Advance moves it on by d.
func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

// names returns the names of rules, sorted.
func names(rules []catalog.Rule) []string {
	var n []string
	for _, r := range rules {
		n = append(n, r.Name)
	}
	slices.Sort(n)
	return n
}

func TestOverridesStartFromTheDefaults(t *testing.T) {
	t.Parallel()
	mark := catalog.MarkTag.Path()
	rule := func(c *Client, path, name string) (catalog.Rule, bool) {
		return c.p.limitsFor(path).rule(name)
	}
	t.Run("partial keeps the windows", func(t *testing.T) {
		c := setup(t, WithLimits(mark, Limits{Concurrency: 3})).c
		r, _ := rule(c, mark, catalog.RuleInFlight)
		if r.InFlight != 3 {
			t.Errorf("concurrency %d, want 3", r.InFlight)
		}
		want := names(catalog.Endpoints()[0].Rules) // gettoken's: base + fetch
		want = slices.DeleteFunc(want, func(n string) bool { return n == catalog.RuleFetch })
		want = append(want, catalog.RuleInFlight, catalog.RuleCustomer)
		slices.Sort(want)
		if got := names(c.p.limitsFor(mark).rules); !slices.Equal(got, want) {
			t.Errorf("rules %v, want %v", got, want)
		}
		if m, _ := rule(c, mark, catalog.RulePerMinute); m.Limit != 10000 {
			t.Errorf("per minute %d, want the default 10000", m.Limit)
		}
	})
	t.Run("NoLimit removes, several options add up", func(t *testing.T) {
		c := setup(t, WithLimits(mark, Limits{PerHour: NoLimit}), WithLimits(mark, Limits{PerDay: 500})).c
		if _, ok := rule(c, mark, catalog.RulePerHour); ok {
			t.Error("the hour window is still there")
		}
		if d, ok := rule(c, mark, ruleDay); !ok || d.Limit != 500 || d.Per != catalog.Day {
			t.Errorf("day rule %+v, %t", d, ok)
		}
	})
	t.Run("WithRule and WithoutRule", func(t *testing.T) {
		extra := catalog.Rule{Name: "quota", Scope: catalog.ScopeApp, Limit: 50, Per: catalog.Day, Weighted: true}
		remark := catalog.CustomerRemark.Path()
		c := setup(t, WithRule(mark, extra), WithoutRule(mark, catalog.RuleCustomer), WithoutRule(remark, catalog.RuleCustomer)).c
		if r, ok := rule(c, mark, "quota"); !ok || r != extra {
			t.Errorf("quota %+v, %t", r, ok)
		}
		if _, ok := rule(c, mark, catalog.RuleCustomer); ok {
			t.Error("the customer lock is still there")
		}
	})
	t.Run("a shared lock changed on one side only", func(t *testing.T) {
		remark := catalog.CustomerRemark.Path()
		for _, opts := range [][]Option{
			{WithoutRule(mark, catalog.RuleCustomer)},
			{WithLimits(remark, Limits{PerResource: 2})},
			{WithRule(mark, catalog.Rule{Name: catalog.RuleCustomer, Scope: catalog.ScopeShared, Group: catalog.GroupCustomerEdit, InFlight: 3})},
		} {
			if _, err := New(testCorp, testSecret, opts...); !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "alike") {
				t.Errorf("New = %v, want an error saying to change both alike", err)
			}
		}
		c := setup(t, WithLimits(mark, Limits{PerResource: 2}), WithLimits(remark, Limits{PerResource: 2})).c
		if r, _ := rule(c, remark, catalog.RuleCustomer); r.InFlight != 2 {
			t.Errorf("both changed: remark's lock %d, want 2", r.InFlight)
		}
	})
	t.Run("other endpoints keep the defaults", func(t *testing.T) {
		c := setup(t, WithLimits(mark, Limits{Concurrency: 1})).c
		if r, _ := rule(c, catalog.CustomerRemark.Path(), catalog.RuleInFlight); r.InFlight != 5 {
			t.Errorf("remark concurrency %d, want 5", r.InFlight)
		}
	})
	t.Run("a path the SDK does not wrap", func(t *testing.T) {
		c := setup(t, WithLimits("/cgi-bin/user/get", Limits{Concurrency: 2})).c
		got := names(c.p.limitsFor("/cgi-bin/user/get").rules)
		want := append(names(catalog.Generic()), catalog.RuleInFlight)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("rules %v, want %v", got, want)
		}
		if got := names(c.p.limitsFor("/cgi-bin/user/list").rules); !slices.Equal(got, names(catalog.Generic())) {
			t.Errorf("another unwrapped path: %v", got)
		}
	})
}

func TestOverrideMistakes(t *testing.T) {
	t.Parallel()
	mark := catalog.MarkTag.Path()
	for _, tc := range []struct {
		name string
		opt  Option
		want string
	}{
		{"letter missing", WithLimits("/cgi-bin/externalcontact/mark_ta", Limits{Concurrency: 3}), "did you mean"},
		{"letters swapped", WithLimits("/cgi-bin/externalcontact/makr_tag", Limits{Concurrency: 3}), "did you mean"},
		{"case", WithLimits("/cgi-bin/externalcontact/Mark_Tag", Limits{Concurrency: 3}), "did you mean"},
		{"no prefix", WithLimits("/externalcontact/mark_tag", Limits{Concurrency: 3}), "did you mean"},
		{"trailing slash", WithRule(mark+"/", catalog.Rule{Name: "x", Scope: catalog.ScopeAPI, InFlight: 1}), "did you mean"},
		{"two slips", WithLimits("/cgi-bin/externalcontact/batch/getbyuser", Limits{Concurrency: 3}), "did you mean"},
		{"a letter and a slash", WithLimits("/cgi-bin/externalcontact/mark_tags/", Limits{Concurrency: 3}), "did you mean"},
		{"negative", WithLimits(mark, Limits{PerMinute: -5}), "NoLimit"},
		{"no resource", WithLimits(catalog.TagList.Path(), Limits{PerResource: 1}), "without a resource"},
		{"remove unknown", WithoutRule(mark, "custmer"), `no rule "custmer"`},
		{"bad rule", WithRule(mark, catalog.Rule{Name: "x", Scope: catalog.ScopeAPI}), "exactly one"},
		{"second in-flight cap", WithRule(mark, catalog.Rule{Name: "x", Scope: catalog.ScopeAPI, InFlight: 2}), "second cap"},
		{"shared rule without keys", WithRule(catalog.TagList.Path(), catalog.Rule{Name: "x", Scope: catalog.ScopeShared, Group: "g", InFlight: 1}), "WithKeys"},
		{"keys of a wrapped path", WithKeys(mark, catalog.CustomerKeys), "reads its keys itself"},
		{"relative path", WithLimits("cgi-bin/x", Limits{}), "limits path"},
		{"negative block", WithLimits(mark, Limits{BlockFor: -time.Second}), "BlockFor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(testCorp, testSecret, tc.opt)
			if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an invalid-request error saying %q", err, tc.want)
			}
		})
	}
}

// TestOverrideUnwrappedPaths: paths of WeCom that the SDK does not wrap,
// some close to ones it does, are overridden for Do without a word.
func TestOverrideUnwrappedPaths(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/cgi-bin/user/get", "/cgi-bin/agent/get", "/cgi-bin/user/list", "/cgi-bin/externalcontact/transfer",
		"/cgi-bin/externalcontact/groupchat/onjob_transfer", "/cgi-bin/externalcontact/get_strategy_tag_list", "/cgi-bin/kf/sync_msg"} {
		if _, err := New(testCorp, testSecret, WithLimits(p, Limits{Concurrency: 5})); err != nil {
			t.Errorf("WithLimits(%s): %v", p, err)
		}
	}
}

// TestTogether: a call's slot-only requests become With slots of its API's
// request, taken in one step; counts, days and weights stay requests of
// their own, and a call without an API request is left as it is.
func TestTogether(t *testing.T) {
	t.Parallel()
	lock := func(key string) leaseRequest {
		return leaseRequest{Request: throttle.Request{Key: key, Concurrency: 1}, order: scopeOrder(catalog.ScopeResource)}
	}
	api := leaseRequest{Request: throttle.Request{Key: "api", Concurrency: 5, Windows: []throttle.Window{{Limit: 10, Period: time.Minute}}}, order: scopeOrder(catalog.ScopeAPI)}
	count := leaseRequest{Request: throttle.Request{Key: "count", Windows: []throttle.Window{{Limit: 10, Period: time.Minute}}}, order: scopeOrder(catalog.ScopeResource)}
	day := leaseRequest{Request: throttle.Request{Key: "api~day", Windows: []throttle.Window{{Limit: 7, Period: calendarWindow(catalog.Day)}}}, calendar: catalog.Day, order: scopeOrder(catalog.ScopeAPI)}
	ip := leaseRequest{Request: throttle.Request{Key: "ip", Windows: []throttle.Window{{Limit: 10, Period: time.Minute}}}, order: scopeOrder(catalog.ScopeIP)}
	for _, tc := range []struct {
		name string
		in   []leaseRequest
		want []string // keys, each with its With keys after a "+"
	}{
		{"a lock and the API", []leaseRequest{lock("c1"), api}, []string{"api+c1"}},
		{"two locks, a count and a day", []leaseRequest{lock("c1"), count, lock("c2"), api, day, ip}, []string{"count", "api+c1+c2", "api~day", "ip"}},
		{"no API request", []leaseRequest{lock("c1"), ip}, []string{"c1", "ip"}},
		{"nothing to fold", []leaseRequest{count, api}, []string{"count", "api"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range together(tc.in) {
				k := r.Key
				for _, w := range r.With {
					k += "+" + w.Key
				}
				got = append(got, k)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("together = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRequestsFromRules: the leases a call takes, per rule and scope.
func TestRequestsFromRules(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC) // 23:00 CST
	markCall := &call{id: catalog.MarkTag, path: catalog.MarkTag.Path(), resource: "u1|wm1"}
	type want struct {
		key         string
		concurrency int
		windows     []throttle.Window
		calendar    catalog.Period
		members     []string
	}
	base := []throttle.Window{{Limit: 10000, Period: time.Minute}, {Limit: 150000, Period: time.Hour}}
	for _, tc := range []struct {
		name string
		opts []Option
		cl   *call
		want []want
	}{
		{"mark_tag: the customer first, then the API", nil, markCall, []want{
			{"{wwcorp}@customer-edit|u1|wm1", 1, nil, 0, nil},
			{"{wwcorp}" + catalog.MarkTag.Path(), 5, base, 0, nil},
		}},
		{"remark shares the customer's lock", nil, &call{id: catalog.CustomerRemark, path: catalog.CustomerRemark.Path(), resource: "u1|wm1"}, []want{
			{"{wwcorp}@customer-edit|u1|wm1", 1, nil, 0, nil},
			{"{wwcorp}" + catalog.CustomerRemark.Path(), 5, base, 0, nil},
		}},
		{"per IP with an egress", []Option{WithEgress("nat-1")}, &call{path: "/cgi-bin/user/get"}, []want{
			{"{wwcorp}/cgi-bin/user/get", 0, base, 0, nil},
			{"ip:nat-1/cgi-bin/user/get", 0, []throttle.Window{{Limit: 20000, Period: time.Minute}, {Limit: 600000, Period: time.Hour}}, 0, nil},
		}},
		{"per IP after a count of the app's", []Option{WithEgress("nat-1"), WithAgentID(1000002), WithRule(catalog.TagList.Path(),
			catalog.Rule{Name: "app-day", Scope: catalog.ScopeApp, Limit: 9, Per: catalog.Day})}, &call{id: catalog.TagList, path: catalog.TagList.Path()}, []want{
			{"{wwcorp}" + catalog.TagList.Path(), 5, base, 0, nil},
			{"{wwcorp}#1000002@" + catalog.TagList.Path() + "~day:20261124", 0, []throttle.Window{{Limit: 9, Period: calendarWindow(catalog.Day)}}, catalog.Day, nil},
			{"ip:nat-1" + catalog.TagList.Path(), 0, []throttle.Window{{Limit: 20000, Period: time.Minute}, {Limit: 600000, Period: time.Hour}}, 0, nil},
		}},
		{"a day on a key of its CST date", []Option{WithLimits(catalog.TagList.Path(), Limits{PerDay: 7})}, &call{id: catalog.TagList, path: catalog.TagList.Path()}, []want{
			{"{wwcorp}" + catalog.TagList.Path(), 5, base, 0, nil},
			{"{wwcorp}" + catalog.TagList.Path() + "~day:20261124", 0, []throttle.Window{{Limit: 7, Period: calendarWindow(catalog.Day)}}, catalog.Day, nil},
		}},
		{"uploadimg: a day and a month on keys of their own", nil, &call{id: catalog.MediaUploadImage, path: catalog.MediaUploadImage.Path()}, []want{
			{"{wwcorp}" + catalog.MediaUploadImage.Path(), 0, base, 0, nil},
			{"{wwcorp}" + catalog.MediaUploadImage.Path() + "~day:20261124", 0, []throttle.Window{{Limit: 1000, Period: 25 * time.Hour}}, catalog.Day, nil},
			{"{wwcorp}" + catalog.MediaUploadImage.Path() + "~month:202611", 0, []throttle.Window{{Limit: 3000, Period: 31*24*time.Hour + time.Hour}}, catalog.Month, nil},
		}},
		{"per app and member", []Option{WithAgentID(1000002), WithKeys("/cgi-bin/made_up/chat_send", unitKeys), WithRule("/cgi-bin/made_up/chat_send",
			catalog.Rule{Name: "member", Scope: catalog.ScopeAppMember, Group: "message", Limit: 30, Per: catalog.Minute})},
			&call{path: "/cgi-bin/made_up/chat_send", members: []string{"a", "B", "b", "c"}}, []want{
				{"{wwcorp}/cgi-bin/made_up/chat_send", 0, base, 0, nil},
				{"{wwcorp}#1000002@message", 0, []throttle.Window{{Limit: 30, Period: time.Minute}}, 0, []string{"a", "b", "c"}},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := setup(t, tc.opts...).c
			reqs := c.p.requests(tc.cl, c.p.limitsFor(tc.cl.path), now)
			var got []want
			for _, r := range reqs {
				got = append(got, want{r.Key, r.Concurrency, r.Windows, r.calendar, r.Members})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("requests %+v, want %+v", got, tc.want)
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if g.key != w.key || g.concurrency != w.concurrency || !slices.Equal(g.windows, w.windows) || g.calendar != w.calendar || !slices.Equal(g.members, w.members) {
					t.Errorf("request %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// TestDayCountEndsAtCSTMidnight: a daily limit refuses the call once spent,
// until the next midnight in China Standard Time, without sending it; a
// 45009 on an API limited only per day blocks it until then.
func TestDayCountEndsAtCSTMidnight(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(time.Date(2026, 11, 24, 15, 50, 0, 0, time.UTC)) // 23:50 CST
	path := catalog.TagList.Path()
	f := setup(t, withClock(clock.Now), WithLimits(path, Limits{PerDay: 2}))
	f.respond("GET", path, `{"errcode":0,"errmsg":"ok","taglist":[]}`)
	ctx := context.Background()
	for i := range 2 {
		if _, err := f.c.Tags.List(ctx); f.record(err) != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	_, err := f.c.Tags.List(ctx)
	f.record(err)
	var rl *RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != 10*time.Minute || !strings.Contains(err.Error(), "midnight CST") {
		t.Fatalf("third call: %v, want a RateLimitError to retry after 10m (midnight CST)", err)
	}
	if n := f.calls("GET", path); n != 2 {
		t.Errorf("%d requests sent, want 2", n)
	}
	clock.Set(time.Date(2026, 11, 24, 16, 0, 1, 0, time.UTC)) // 00:00:01 CST
	if _, err := f.c.Tags.List(ctx); f.record(err) != nil {
		t.Fatalf("after midnight CST: %v", err)
	}

	// 45009 on an API limited only per day: blocked until the next midnight.
	day := setup(t, withClock(clock.Now), WithLimits(path, Limits{PerMinute: NoLimit, PerHour: NoLimit, PerDay: 100}))
	day.respond("GET", path, `{"errcode":45009,"errmsg":"api freq out of limit"}`)
	_, err = day.c.Tags.List(ctx)
	day.record(err)
	want := 24*time.Hour - time.Second
	if !errors.As(err, &rl) || rl.RetryAfter != want {
		t.Errorf("45009 on a daily limit: %v, want RetryAfter %s", err, want)
	}
}

// TestBlockEscalates: a 45009 blocks the API for its shortest window; one
// that comes soon after that block ended, for the next longer window (an
// hour, then the rest of the CST day); one during a block, or long after,
// starts again from the shortest.
func TestBlockEscalates(t *testing.T) {
	t.Parallel()
	path := catalog.TagList.Path()
	c := setup(t, WithLimits(path, Limits{PerDay: 1000})).c
	el := c.p.limitsFor(path)
	t0 := time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC) // 12:00 CST
	for _, tc := range []struct {
		name string
		at   time.Time
		want time.Duration
	}{
		{"first", t0, time.Minute},
		{"during the block", t0.Add(30 * time.Second), time.Minute},
		{"just after it", t0.Add(90*time.Second + 10*time.Second), time.Hour},
		{"just after the hour", t0.Add(100*time.Second + time.Hour + 5*time.Second), 12*time.Hour - 105*time.Second - time.Hour},
		{"a new day starts again", t0.Add(12*time.Hour + 30*time.Second), time.Minute},
		{"long after", t0.Add(72 * time.Hour), time.Minute},
	} {
		if got := c.p.block(path, el, tc.at); got != tc.want {
			t.Errorf("%s: block %s, want %s", tc.name, got, tc.want)
		}
	}
	fixed := setup(t, WithLimits(path, Limits{BlockFor: 7 * time.Minute})).c
	for range 3 {
		if got := fixed.p.block(path, fixed.p.limitsFor(path), t0); got != 7*time.Minute {
			t.Errorf("BlockFor: %s", got)
		}
	}
}

// TestWeightedRule: a call counts its weight against a weighted rule (a
// message to N members counts N against the app's daily quota) and one
// against the others.
func TestWeightedRule(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC))
	path := "/cgi-bin/made_up/chat_send"
	f := setup(t, withClock(clock.Now), WithAgentID(1000002), WithKeys(path, unitKeys),
		WithRule(path, catalog.Rule{Name: "recipients", Scope: catalog.ScopeApp, Group: "message", Limit: 10, Per: catalog.Day, Weighted: true}))
	f.respond("POST", path, `{"errcode":0,"errmsg":"ok"}`)
	send := func(n int) error {
		return f.record(f.c.Do(context.Background(), "POST", path, nil, map[string]any{"units": n}, nil))
	}
	for _, n := range []int{4, 4} {
		if err := send(n); err != nil {
			t.Fatalf("a message to %d: %v", n, err)
		}
	}
	var rl *RateLimitError
	if err := send(3); !errors.As(err, &rl) || rl.calendar != catalog.Day {
		t.Fatalf("3 more recipients than the quota's 2 left: %v, want a daily RateLimitError", err)
	}
	if err := send(2); err != nil {
		t.Fatalf("the 2 recipients left: %v", err)
	}
	if n := f.calls("POST", path); n != 3 {
		t.Errorf("%d messages sent, want 3", n)
	}
	if err := send(11); !errors.Is(err, ErrInvalidRequest) && !errors.Is(err, throttle.ErrInvalidRequest) {
		t.Errorf("a weight over the quota: %v, want an invalid request", err)
	}
}

// TestPerMemberRule: a call counts once on each member it reaches, all of
// them or none: one member without room refuses the whole call unsent,
// naming that member, and the others keep their room.
func TestPerMemberRule(t *testing.T) {
	t.Parallel()
	path := "/cgi-bin/made_up/chat_send"
	f := setup(t, WithAgentID(1000002), WithKeys(path, unitKeys),
		WithRule(path, catalog.Rule{Name: "member-minute", Scope: catalog.ScopeAppMember, Group: "message", Limit: 2, Per: catalog.Minute}))
	f.respond("POST", path, `{"errcode":0,"errmsg":"ok"}`)
	send := func(ctx context.Context, members ...string) error {
		return f.c.Do(ctx, "POST", path, nil, map[string]any{"members": members}, nil)
	}
	ctx := context.Background()
	for _, to := range [][]string{{"a", "b"}, {"B", "a", "b"}} { // b named twice counts once
		if err := send(ctx, to...); err != nil {
			t.Fatalf("to %q: %v", to, err)
		}
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var rl *RateLimitError
	if err := send(short, "c", "b", "a", "d"); !errors.As(err, &rl) || !slices.Equal(rl.Members, []string{"b", "a"}) || rl.RetryAfter < 50*time.Second {
		t.Fatalf("to members out of room: %v, want a RateLimitError naming b and a, for about a minute", err)
	}
	for _, to := range [][]string{{"c", "d"}, {"d", "c"}} {
		if err := send(ctx, to...); err != nil {
			t.Fatalf("to %q after a refusal that named others: %v", to, err)
		}
	}
	if n := f.calls("POST", path); n != 4 {
		t.Errorf("%d messages sent, want 4", n)
	}
}

// TestRenewSkipsLeasesWithoutSlot: renew renews slots only; a lease that
// counts a window and holds no slot is not "lost" (which would make the
// call start over, and count again, forever).
func TestRenewSkipsLeasesWithoutSlot(t *testing.T) {
	t.Parallel()
	c := setup(t).c
	ctx := context.Background()
	window, err := c.p.cfg.limiter.Acquire(ctx, throttle.Request{Key: "w", Windows: []throttle.Window{{Limit: 5, Period: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	slot, err := c.p.cfg.limiter.Acquire(ctx, throttle.Request{Key: "s", Concurrency: 1, TTL: DefaultLeaseTTL})
	if err != nil {
		t.Fatal(err)
	}
	last, err := c.p.cfg.limiter.Acquire(ctx, throttle.Request{Key: "l", Concurrency: 1, TTL: DefaultLeaseTTL})
	if err != nil {
		t.Fatal(err)
	}
	leases := []throttle.Lease{window, slot, last}
	lost, err := c.p.renew(ctx, leases)
	if lost || err != nil {
		t.Fatalf("renew = lost %t, %v; want the slot renewed and nothing lost", lost, err)
	}
	if leases[1].Expires.Before(slot.Expires) {
		t.Errorf("the slot's expiry went back: %s -> %s", slot.Expires, leases[1].Expires)
	}
}

// unitKeys reads a test request's members ("members") and units ("units").
func unitKeys(_ url.Values, body []byte) (catalog.Keys, error) {
	var r struct {
		Members []string `json:"members"`
		Units   int      `json:"units"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return catalog.Keys{}, fmt.Errorf("%w: %v", catalog.ErrNoKeys, err)
	}
	return catalog.Keys{Members: r.Members, Weight: r.Units}, nil
}
