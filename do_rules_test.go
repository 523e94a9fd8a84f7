package wecom_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
)

// unwrapped is a path the SDK does not wrap, as a user calls it through Do.
const unwrapped = "/cgi-bin/thirdparty/made_up_send"

// inFlightServer answers every call with success after latency and
// records the most calls it had in flight at once and how many came.
func inFlightServer(t *testing.T, latency time.Duration) (url string, peak, calls *atomic.Int64) {
	t.Helper()
	var now atomic.Int64
	peak, calls = new(atomic.Int64), new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		n := now.Add(1)
		defer now.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(latency)
		_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, peak, calls
}

// newDoClient is New as a user calls it to call unwrapped through Do.
func newDoClient(url string, opts ...wecom.Option) (*wecom.Client, error) {
	src := wecom.TokenSourceFunc(func(context.Context) (wecom.Token, error) {
		return wecom.Token{Value: "tok-do-rules", ExpiresAt: time.Now().Add(time.Hour)}, nil
	})
	return wecom.New("wwdorules", "", append([]wecom.Option{wecom.WithBaseURL(url), wecom.WithTokenSource(src), wecom.WithAgentID(1000002)}, opts...)...)
}

// doClient is newDoClient, which must succeed.
func doClient(t *testing.T, url string, opts ...wecom.Option) *wecom.Client {
	t.Helper()
	c, err := newDoClient(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A limit added with WithRule that counts what a call through Do does not
// say (its members, the resource it edits, its units) is refused, by New
// (a per-resource rule on an endpoint that names none) or at the call, the
// error naming the rule, and nothing is sent: Do would otherwise send every
// such call counted against none of it.
func TestDoRefusesRulesItCannotCount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		path string
		rule catalog.Rule
	}{
		{"per member", unwrapped, catalog.Rule{Name: "member-minute", Scope: catalog.ScopeAppMember, Group: "msg", Limit: 30, Per: catalog.Minute}},
		{"per resource", unwrapped, catalog.Rule{Name: "one-at-a-time", Scope: catalog.ScopeResource, InFlight: 1}},
		{"shared per resource", unwrapped, catalog.Rule{Name: "lock", Scope: catalog.ScopeShared, Group: "thing", InFlight: 1}},
		{"per robot", unwrapped, catalog.Rule{Name: "robot-minute", Scope: catalog.ScopeRobot, Limit: 20, Per: catalog.Minute}},
		{"weighted", unwrapped, catalog.Rule{Name: "recipients", Scope: catalog.ScopeApp, Group: "msg", Limit: 1000, Per: catalog.Day, Weighted: true}},
		{"per member, on a wrapped endpoint", catalog.TagCreate.Path(), catalog.Rule{Name: "member-minute", Scope: catalog.ScopeAppMember, Group: "msg", Limit: 30, Per: catalog.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, _, calls := inFlightServer(t, 0)
			c, err := newDoClient(url, wecom.WithRule(tc.path, tc.rule))
			if err == nil {
				err = c.Do(context.Background(), http.MethodPost, tc.path, nil, map[string]any{"x": 1}, nil)
			}
			if !errors.Is(err, wecom.ErrInvalidRequest) || !strings.Contains(err.Error(), tc.rule.Name) {
				t.Errorf("Do = %v, want ErrInvalidRequest naming the rule %q", err, tc.rule.Name)
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// A typed method whose endpoint got a per-member limit with WithRule fails
// naming the rule rather than send a call it cannot count.
func TestTypedCallRefusesRulesItCannotCount(t *testing.T) {
	t.Parallel()
	url, _, calls := inFlightServer(t, 0)
	rule := catalog.Rule{Name: "member-minute", Scope: catalog.ScopeAppMember, Group: "msg", Limit: 30, Per: catalog.Minute}
	c := doClient(t, url, wecom.WithRule(catalog.TagCreate.Path(), rule))
	_, err := c.Tags.Create(context.Background(), wecom.TagCreateRequest{Name: "t"})
	if !errors.Is(err, wecom.ErrInvalidRequest) || !strings.Contains(err.Error(), rule.Name) {
		t.Errorf("Tags.Create = %v, want ErrInvalidRequest naming the rule %q", err, rule.Name)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// The rules Do can count from what it is given it enforces: an in-flight
// cap per app, added with WithRule on a path the SDK does not wrap, holds
// against a server that takes its time.
func TestDoEnforcesRulesItCanCount(t *testing.T) {
	t.Parallel()
	url, peak, calls := inFlightServer(t, 20*time.Millisecond)
	c := doClient(t, url, wecom.WithRule(unwrapped, catalog.Rule{Name: "two-at-a-time", Scope: catalog.ScopeApp, InFlight: 2}))
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			if err := c.Do(context.Background(), http.MethodPost, unwrapped, nil, map[string]any{"x": 1}, nil); err != nil {
				t.Errorf("Do: %v", err)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Errorf("at most %d calls in flight at the server, want 2", p)
	}
	if n := calls.Load(); n != 12 {
		t.Errorf("%d calls reached the server, want 12", n)
	}
}
