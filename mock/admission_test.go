package mock

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// sendKeys reads a test send: its robot or customer ("key"), its members
// ("to") and its units (one per member).
func sendKeys(_ url.Values, body []byte) (catalog.Keys, error) {
	var r struct {
		Key string
		To  []string
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return catalog.Keys{}, fmt.Errorf("%w: %v", catalog.ErrNoKeys, err)
	}
	return catalog.Keys{Resource: r.Key, Members: r.To, Weight: len(r.To)}, nil
}

// TestAdmissionEveryScope: the Server enforces a rule of every scope from
// the catalog's declaration alone, on the keys the endpoint's KeysFunc
// reads: per app and member (each member a send names), weighted per app,
// per robot, per resource in flight, per source IP.
func TestAdmissionEveryScope(t *testing.T) {
	t.Parallel()
	rt := &route{Endpoint: catalog.Endpoint{ID: "/cgi-bin/test/send", Method: "POST", Keys: sendKeys, Resource: "thing", Rules: []catalog.Rule{
		{Name: "member", Scope: catalog.ScopeAppMember, Group: "msg", Limit: 2, Per: catalog.Minute},
		{Name: "units", Scope: catalog.ScopeApp, Group: "msg", Limit: 5, Per: catalog.Hour, Weighted: true},
		{Name: "robot", Scope: catalog.ScopeRobot, Limit: 3, Per: catalog.Minute},
		{Name: "one", Scope: catalog.ScopeResource, InFlight: 1},
		{Name: "ip", Scope: catalog.ScopeIP, Limit: 100, Per: catalog.Minute},
	}}}
	rt.limits = limits(rt.Rules, Config{})
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := &corp{id: "ww1"}
	app1, app2, app3 := &token{app: appOf("s1")}, &token{app: appOf("s2")}, &token{app: appOf("s3")}
	now := time.Unix(1_790_000_000, 0)
	send := func(tok *token, body string) (admission, bool) {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		cs, units := countedKeys(rt, c, tok, "10.0.0.1", &input{body: []byte(body)}, time.Time{})
		if !s.admitRate(cs, units, now) {
			return admission{}, false
		}
		adm, aerr := s.admit(rt, cs)
		return adm, aerr == nil
	}
	steps := []struct {
		name string
		tok  *token
		body string
		want bool
	}{
		{"a to a and b", app1, `{"key":"k1","to":["a","b"]}`, true},
		{"a again: its second", app1, `{"key":"k2","to":["a"]}`, true},
		{"a a third time, with c: none of it", app1, `{"key":"k3","to":["c","a"]}`, false},
		{"c alone: the refusal above took nothing", app1, `{"key":"k3","to":["c"]}`, true},
		{"the app's 5 units are used up by 2 more", app1, `{"key":"k3","to":["d","e"]}`, false},
		{"another app counts apart", app2, `{"key":"k3","to":["a","b"]}`, true},
		{"robot k3's third message", app2, `{"key":"k3","to":["x"]}`, true},
		{"robot k3's fourth message", app2, `{"key":"k3","to":["y"]}`, false},
	}
	for _, st := range steps {
		adm, ok := send(st.tok, st.body)
		if ok != st.want {
			t.Errorf("%s: admitted %v, want %v", st.name, ok, st.want)
		}
		if ok {
			s.release(adm)
		}
	}
	held, ok := send(app3, `{"key":"k9","to":["y"]}`)
	if !ok {
		t.Fatal("a send on a fresh robot and member was refused")
	}
	if _, ok := send(app3, `{"key":"k9","to":["z"]}`); ok {
		t.Error("a second call of resource k9 in flight was admitted")
	}
	s.release(held)
	if _, ok := send(app3, `{"key":"k9","to":["w"]}`); !ok {
		t.Error("a call of resource k9, released, was refused")
	}
}

// TestAnswerOK: a row with no handler of its own is served: a request its
// catalog row accepts succeeds, a POST body that is no JSON object answers
// 47001, and one whose keys the row cannot read 40058.
func TestAnswerOK(t *testing.T) {
	t.Parallel()
	e := catalog.Endpoint{ID: "/cgi-bin/test/edit", Method: "POST", Keys: catalog.CustomerKeys}
	for _, tc := range []struct {
		body string
		code int
	}{
		{`{"userid":"u1","external_userid":"wm1"}`, 0},
		{`[1]`, catalog.CodeDataFormat},
		{`{"userid":"u1"}`, catalog.CodeInvalidParam},
	} {
		_, aerr := answerOK(&corp{id: "ww1"}, &input{endpoint: &e, body: []byte(tc.body)})
		code := 0
		if aerr != nil {
			code = aerr.code
		}
		if code != tc.code {
			t.Errorf("%s: errcode %d, want %d", tc.body, code, tc.code)
		}
	}
}

// TestThirdPartyIPLimits: a third-party app's call (on a corp token from
// get_corp_token) counts on its API's per-IP windows at WeCom's
// third-party limits, 40,000 a minute and 1,200,000 an hour; another
// app's at 20,000 and 600,000; Config.IPWindows, when set, holds for both.
func TestThirdPartyIPLimits(t *testing.T) {
	t.Parallel()
	ipWindows := func(cfg Config, tok *token) []Window {
		t.Helper()
		rts, err := newRoutes(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cs, _ := countedKeys(rts[string(catalog.TagList)], &corp{id: "ww1"}, tok, "10.0.0.1", &input{}, time.Time{})
		for _, ck := range cs {
			if ck.scope == catalog.ScopeIP {
				return ck.windows
			}
		}
		t.Fatalf("no per-IP key among %v", cs)
		return nil
	}
	own, thirdParty := &token{app: appOf("s1")}, &token{app: suiteTarget("tpsuite")}
	set := []Window{{Limit: 7, Period: time.Minute}}
	for _, tc := range []struct {
		name string
		cfg  Config
		tok  *token
		want []Window
	}{
		{"own app", Config{}, own, []Window{{catalog.IPPerMinute, time.Minute}, {catalog.IPPerHour, time.Hour}}},
		{"third-party app", Config{}, thirdParty, []Window{{catalog.ThirdPartyIPPerMinute, time.Minute}, {catalog.ThirdPartyIPPerHour, time.Hour}}},
		{"own app, IPWindows set", Config{IPWindows: set}, own, set},
		{"third-party app, IPWindows set", Config{IPWindows: set}, thirdParty, set},
	} {
		if got := ipWindows(tc.cfg, tc.tok); !slices.Equal(got, tc.want) {
			t.Errorf("%s: per-IP windows %v, want %v", tc.name, got, tc.want)
		}
	}
}
