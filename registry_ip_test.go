package wecom

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
)

// testEgress is the fleet's egress in the per-IP tests (TEST-NET-3).
const testEgress = "203.0.113.7"

// listOnce lists the tags of app's corp through r within 30 s: a bound for
// a loaded run's token fetch, not a figure (the per-IP window's minute is
// longer, so the limiter refuses at once a call it would have to wait for).
func listOnce(t *testing.T, r *Registry, app App) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := client(t, r, app).Tags.List(ctx)
	return err
}

// wantIPRefusal fails unless err is the per-IP window's refusal of
// tag/list, before anything was sent.
func wantIPRefusal(t *testing.T, what string, err error) {
	t.Helper()
	var rl *RateLimitError
	var le *throttle.LimitError
	if !errors.As(err, &rl) || !errors.As(err, &le) {
		t.Fatalf("%s: %v, want a *RateLimitError from the limiter", what, err)
	}
	if want := "ip:" + testEgress + catalog.TagList.Path(); le.Key != want {
		t.Errorf("%s: refused on %q, want %q", what, le.Key, want)
	}
}

// TestIPLimitsAcrossCorps: with the fleet's egress declared, the per-IP
// window of an API counts the calls of every corp of the process: three
// corps spend its 3 calls a minute, a fourth corp's call is refused
// before it is sent, another API goes on, and the window opens again a
// minute later.
func TestIPLimitsAcrossCorps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCorpFleet(t, 4, mock.Config{})
		r := f.registry(t, nil, WithClientOptions(WithEgress(testEgress), WithIPLimits(3, 0)))
		for _, app := range f.apps[:3] {
			if err := listOnce(t, r, app); err != nil {
				t.Fatalf("%s: %v", app, err)
			}
		}
		wantIPRefusal(t, "a fourth corp", listOnce(t, r, f.apps[3]))
		if n := f.srv.Stats().Calls[catalog.TagList.Path()]; n != 3 {
			t.Errorf("the mock saw %d calls of tag/list, want 3", n)
		}
		if _, err := client(t, r, f.apps[3]).Tags.Create(context.Background(), TagCreateRequest{Name: "x"}); err != nil {
			t.Errorf("another API of the fourth corp: %v", err)
		}
		time.Sleep(time.Minute + time.Second)
		if err := listOnce(t, r, f.apps[3]); err != nil {
			t.Errorf("a minute later: %v", err)
		}
	})
}

// TestIPLimitsThirdParty: WithIPLimits sets every endpoint's per-IP rules
// (the third-party pair, say), and a path's own WithRule still wins.
func TestIPLimitsThirdParty(t *testing.T) {
	t.Parallel()
	c, err := New(testCorp, testSecret, WithIPLimits(catalog.ThirdPartyIPPerMinute, catalog.ThirdPartyIPPerHour),
		WithRule(catalog.TagGet.Path(), catalog.Rule{Name: catalog.RuleIPPerMinute, Scope: catalog.ScopeIP, Limit: 5, Per: catalog.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, rule string
		want       int
	}{
		{catalog.TagList.Path(), catalog.RuleIPPerMinute, catalog.ThirdPartyIPPerMinute},
		{catalog.TagList.Path(), catalog.RuleIPPerHour, catalog.ThirdPartyIPPerHour},
		{"/cgi-bin/not/wrapped", catalog.RuleIPPerHour, catalog.ThirdPartyIPPerHour},
		{catalog.TagGet.Path(), catalog.RuleIPPerMinute, 5},
		{catalog.TagGet.Path(), catalog.RuleIPPerHour, catalog.ThirdPartyIPPerHour},
	} {
		r, ok := c.p.limitsFor(tc.path).rule(tc.rule)
		if !ok || r.Limit != tc.want {
			t.Errorf("%s %s: %d (found %v), want %d", tc.path, tc.rule, r.Limit, ok, tc.want)
		}
	}
	if _, err := New(testCorp, testSecret, WithIPLimits(-1, 0)); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("a negative IP limit: %v, want ErrInvalidRequest", err)
	}
}

// TestIPLimitsAcrossProcesses: two registries (two processes) sharing a
// Redis limiter and an egress hold the per-IP window together, each with
// corps of its own.
func TestIPLimitsAcrossProcesses(t *testing.T) {
	t.Parallel()
	f := newCorpFleet(t, 4, mock.Config{})
	var rs []*Registry
	for _, b := range sharedLimiters(t, 2) {
		rs = append(rs, f.registry(t, nil, WithClientOptions(WithLimiter(b), WithEgress(testEgress), WithIPLimits(3, 0))))
	}
	for i, app := range f.apps[:3] {
		if err := listOnce(t, rs[i%2], app); err != nil {
			t.Fatalf("%s: %v", app, err)
		}
	}
	wantIPRefusal(t, "a fourth corp in the second process", listOnce(t, rs[1], f.apps[3]))
	wantIPRefusal(t, "the fourth corp in the first process", listOnce(t, rs[0], f.apps[3]))
	if n := f.srv.Stats().Calls[catalog.TagList.Path()]; n != 3 {
		t.Errorf("the mock saw %d calls of tag/list, want 3", n)
	}
}

// TestMockIPWindowAcrossCorps: a fleet that does not declare its egress
// is held to the per-IP window by the mock, as by WeCom: the fourth corp's
// call is answered 45009.
func TestMockIPWindowAcrossCorps(t *testing.T) {
	t.Parallel()
	f := newCorpFleet(t, 4, mock.Config{IPWindows: []mock.Window{{Limit: 3, Period: time.Minute}}})
	r := f.registry(t, nil)
	for _, app := range f.apps[:3] {
		if err := listOnce(t, r, app); err != nil {
			t.Fatalf("%s: %v", app, err)
		}
	}
	err := listOnce(t, r, f.apps[3])
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != CodeFrequencyLimited {
		t.Errorf("a fourth corp past the mock's per-IP window: %v, want errcode 45009", err)
	}
}

// TestInstallationsThirdPartyIPLimits: the clients of a suite's
// installations hold WeCom's third-party per-IP limits; WithIPLimits among
// the registry's options still sets them.
func TestInstallationsThirdPartyIPLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		opts               []Option
		perMinute, perHour int
	}{
		{"default", nil, catalog.ThirdPartyIPPerMinute, catalog.ThirdPartyIPPerHour},
		{"WithIPLimits", []Option{WithIPLimits(100, 0)}, 100, catalog.ThirdPartyIPPerHour},
	} {
		suite, err := NewSuite("tpsuite", "suite-secret", WithBaseURL(testBaseURL))
		if err != nil {
			t.Fatal(err)
		}
		codes := &MemoryPermanentCodes{}
		if err := codes.Set(t.Context(), testCorp, Installation{PermanentCode: "code", AgentID: 1}); err != nil {
			t.Fatal(err)
		}
		in, err := NewInstallations(suite, codes, WithClientOptions(append([]Option{WithEgress(testEgress), WithBaseURL(testBaseURL)}, tc.opts...)...))
		if err != nil {
			t.Fatal(err)
		}
		c, err := in.Client(t.Context(), testCorp)
		if err != nil {
			t.Fatal(err)
		}
		for rule, want := range map[string]int{catalog.RuleIPPerMinute: tc.perMinute, catalog.RuleIPPerHour: tc.perHour} {
			if r, ok := c.p.limitsFor(catalog.TagList.Path()).rule(rule); !ok || r.Limit != want {
				t.Errorf("%s: %s %d (found %v), want %d", tc.name, rule, r.Limit, ok, want)
			}
		}
	}
}

// TestIPBlockCoolsTheIP: WeCom's 45009 does not say whether the corp's
// window or the egress IP's was exceeded. With the IP's exceeded by
// senders the fleet does not count (the mock's window is 3 a minute, the
// client's WeCom's), the first corp refused cools its own key; a second
// corp refused on the same IP and API shows the IP blocked, and its key
// cools too: the other corps' calls of the API, in every process sharing
// the limiter, stop before they are sent, and another API goes on.
func TestIPBlockCoolsTheIP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		processes int
	}{{"Memory", 1}, {"RedisTwoProcesses", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newCorpFleet(t, 12, mock.Config{IPWindows: []mock.Window{{Limit: 3, Period: time.Minute}}})
			var rs []*Registry
			if tc.processes == 1 {
				rs = append(rs, f.registry(t, nil, WithClientOptions(WithEgress(testEgress))))
			} else {
				for _, b := range sharedLimiters(t, tc.processes) {
					rs = append(rs, f.registry(t, nil, WithClientOptions(WithLimiter(b), WithEgress(testEgress))))
				}
			}
			process := func(i int) *Registry { return rs[i%len(rs)] }
			for i, app := range f.apps[:3] {
				if err := listOnce(t, process(i), app); err != nil {
					t.Fatalf("%s: %v", app, err)
				}
			}
			for i, app := range f.apps[3:5] {
				var ae *APIError
				if err := listOnce(t, process(i), app); !errors.As(err, &ae) || ae.Code != CodeFrequencyLimited {
					t.Fatalf("%s past the mock's per-IP window: %v, want errcode 45009", app, err)
				}
			}
			// The process that saw the second refusal refuses at once.
			// Another learns of the cooldown from Redis's notice, and until
			// it arrives may still start a call from its block of the
			// window's units (a block spans 2 s at most): each such call's
			// corp is refused 45009 and cools, and the next corp tries.
			cooling, late := process(1), 0
			wantIPCooldown(t, "a third corp after two refused", listOnce(t, cooling, f.apps[5]))
			for _, r := range rs {
				if r == cooling {
					continue
				}
				for ; ; late++ {
					err := listOnce(t, r, f.apps[6+late])
					var ae *APIError
					if !errors.As(err, &ae) || ae.Code != CodeFrequencyLimited || 6+late == len(f.apps)-1 {
						wantIPCooldown(t, "a corp in another process", err)
						break
					}
					time.Sleep(500 * time.Millisecond) // six corps outlast a block's span
				}
			}
			t.Logf("%d calls sent before the notice", late)
			st := f.srv.Stats()
			if n := st.Refusals[CodeFrequencyLimited]; n != 2+late {
				t.Errorf("the mock answered 45009 %d times, want 2 (and %d sent before the notice)", n, late)
			}
			if n := st.Calls[catalog.TagList.Path()]; n != 5+late {
				t.Errorf("the mock saw %d calls of tag/list, want 5 (and %d sent before the notice)", n, late)
			}
			if _, err := client(t, process(0), f.apps[5]).Tags.Create(context.Background(), TagCreateRequest{Name: "x"}); err != nil {
				t.Errorf("another API: %v", err)
			}
		})
	}
}

// wantIPCooldown fails unless err is the limiter's refusal of tag/list
// while the egress IP's key cools down.
func wantIPCooldown(t *testing.T, what string, err error) {
	t.Helper()
	wantIPRefusal(t, what, err)
	var le *throttle.LimitError
	if errors.As(err, &le) && le.Reason != throttle.ReasonCooldown {
		t.Errorf("%s: refused for %s, want a cooldown", what, le.Reason)
	}
}

// TestIPBlockedOnlyBySecondCorp: the refusals of one corp, however many
// and from however many processes, leave the IP open; a second corp's
// shows it blocked, once per block, and a block's marks end with it.
func TestIPBlockedOnlyBySecondCorp(t *testing.T) {
	t.Parallel()
	const ipKey = "ip:" + testEgress + "/cgi-bin/tag/list"
	for _, tc := range []struct {
		name    string
		limiter func(t *testing.T) throttle.Backend
	}{
		{"Memory", func(*testing.T) throttle.Backend { return throttle.NewMemory() }},
		{"Redis", func(t *testing.T) throttle.Backend { return sharedLimiters(t, 1)[0] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lim := tc.limiter(t)
			corp := func(id string) *pipeline {
				c, err := New(id, testSecret, WithLimiter(lim), WithEgress(testEgress))
				if err != nil {
					t.Fatal(err)
				}
				return c.p
			}
			a, b := corp("wwcorpa"), corp("wwcorpb")
			for i, step := range []struct {
				p    *pipeline
				want bool
			}{{a, false}, {a, false}, {corp("wwcorpa"), false}, {b, true}, {b, false}, {corp("wwcorpc"), true}} {
				if got := step.p.ipBlocked(t.Context(), ipKey, time.Minute); got != step.want {
					t.Errorf("refusal %d (%s): IP blocked %v, want %v", i, step.p.cfg.corpID, got, step.want)
				}
			}
			// On another API, a block that ends before the second corp's refusal.
			const short = 300 * time.Millisecond
			if a.ipBlocked(t.Context(), ipKey+"2", short) {
				t.Error("a first refusal: IP blocked, want the corp's")
			}
			time.Sleep(short + 100*time.Millisecond)
			if b.ipBlocked(t.Context(), ipKey+"2", short) {
				t.Error("the first refusal after the block ended: IP blocked, want the corp's")
			}
		})
	}
}

// TestIPCooldownWaitedOut: a call whose context allows waits out the
// egress IP's cooldown as it waits out its corp's (WithWaitOnRateLimit),
// and is sent once the block has ended.
func TestIPCooldownWaitedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCorpFleet(t, 4, mock.Config{IPWindows: []mock.Window{{Limit: 1, Period: time.Minute}}})
		r := f.registry(t, nil, WithClientOptions(WithEgress(testEgress), WithWaitOnRateLimit(true)))
		if err := listOnce(t, r, f.apps[0]); err != nil {
			t.Fatal(err)
		}
		for _, app := range f.apps[1:3] {
			if err := listOnce(t, r, app); errcodeOf(err) != CodeFrequencyLimited {
				t.Fatalf("%s past the mock's per-IP window: %v, want errcode 45009", app, err)
			}
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := client(t, r, f.apps[3]).Tags.List(ctx); err != nil {
			t.Fatalf("a call allowed to wait out the IP's block: %v", err)
		}
		if waited := time.Since(start); waited < time.Minute-time.Second {
			t.Errorf("sent after %s, want after the block (a minute)", waited)
		}
		if n := f.srv.Stats().Refusals[CodeFrequencyLimited]; n != 2 {
			t.Errorf("the mock answered 45009 %d times, want 2", n)
		}
	})
}

// failingMarks is a limiter whose TryAcquire fails, not refuses, on the
// egress IP's 45009 mark: a Redis that stopped answering after the corp's.
type failingMarks struct{ *throttle.Memory }

func (f failingMarks) TryAcquire(ctx context.Context, r throttle.Request) (throttle.Lease, error) {
	if strings.HasPrefix(r.Key, "ip:") {
		return throttle.Lease{}, errors.New("no answer")
	}
	return f.Memory.TryAcquire(ctx, r)
}

// TestIPBlockedNotWhenUnknown: a refusal whose marks the limiter could not
// take or read stays the corp's.
func TestIPBlockedNotWhenUnknown(t *testing.T) {
	t.Parallel()
	lim := failingMarks{throttle.NewMemory()}
	for _, id := range []string{"wwcorpa", "wwcorpb"} {
		c, err := New(id, testSecret, WithLimiter(lim), WithEgress(testEgress))
		if err != nil {
			t.Fatal(err)
		}
		if c.p.ipBlocked(t.Context(), "ip:"+testEgress+"/cgi-bin/tag/list", time.Minute) {
			t.Errorf("%s refused, the IP's mark unknown: IP blocked, want the corp's", id)
		}
	}
}

// shiftingMarks is an in-process limiter whose era moves on with the
// egress IP's 45009 mark when shift is set (Redis lost, or a fallback
// took over, between a refusal's two marks), and which records the TTL
// each mark asked for.
type shiftingMarks struct {
	*throttle.Memory
	shift bool
	era   uint64
	ttls  map[string]time.Duration
}

func (s *shiftingMarks) Era() uint64 { return s.era }

func (s *shiftingMarks) TryAcquire(ctx context.Context, r throttle.Request) (throttle.Lease, error) {
	s.ttls[r.Key] = r.TTL
	if s.shift && strings.HasPrefix(r.Key, "ip:") {
		s.era++
	}
	return s.Memory.TryAcquire(ctx, r)
}

// TestIPMarksAcrossAnEraChange: a refusal whose two marks were taken in
// different eras stays the corp's and gives both marks back, so that a
// store that kept one of them does not read the corp's next refusal as a
// second corp's; and a corp's mark outlives the IP's.
func TestIPMarksAcrossAnEraChange(t *testing.T) {
	t.Parallel()
	const ipKey = "ip:" + testEgress + "/cgi-bin/tag/list"
	lim := &shiftingMarks{Memory: throttle.NewMemory(), shift: true, ttls: map[string]time.Duration{}}
	c, err := New("wwcorpa", testSecret, WithLimiter(lim), WithEgress(testEgress))
	if err != nil {
		t.Fatal(err)
	}
	if c.p.ipBlocked(t.Context(), ipKey, time.Minute) {
		t.Fatal("marks taken across an era change: IP blocked, want the corp's")
	}
	if corp, ip := lim.ttls["{wwcorpa}"+ipKey+"~45009"], lim.ttls[ipKey+"~45009"]; corp <= ip {
		t.Errorf("the corp's mark asked for %s, the IP's for %s: want the corp's to outlive the IP's", corp, ip)
	}
	lim.shift = false
	for _, key := range []string{"{wwcorpa}" + ipKey, ipKey} {
		l, err := lim.Memory.TryAcquire(t.Context(), throttle.Request{Key: key + "~45009", Concurrency: 1, TTL: time.Minute})
		if err != nil {
			t.Errorf("the mark %s after the era change: %v, want it given back", key, err)
			continue
		}
		_ = lim.Memory.Release(t.Context(), l)
	}
	if c.p.ipBlocked(t.Context(), ipKey, time.Minute) {
		t.Error("the same corp's next refusal: IP blocked, want the corp's")
	}
}

// TestIPBlockLongerThanItsWindows: a block longer than the IP's longest
// window (an hour) is a corp's own (a day's or a month's count spent, or
// Limits.BlockFor): it marks nothing and cools no IP, whatever the other
// corps are answered.
func TestIPBlockLongerThanItsWindows(t *testing.T) {
	t.Parallel()
	f := newCorpFleet(t, 6, mock.Config{IPWindows: []mock.Window{{Limit: 3, Period: time.Minute}}})
	r := f.registry(t, nil, WithClientOptions(WithEgress(testEgress), WithLimits(catalog.TagList.Path(), Limits{BlockFor: 2 * time.Hour})))
	for i, app := range f.apps {
		err := listOnce(t, r, app)
		if i < 3 && err != nil {
			t.Fatalf("%s: %v", app, err)
		}
		if i >= 3 && errcodeOf(err) != CodeFrequencyLimited {
			t.Fatalf("%s past the mock's per-IP window: %v, want errcode 45009 from the mock", app, err)
		}
	}
}
