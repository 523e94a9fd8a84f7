package mock_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

const (
	corpID  = "wwcorp1"
	secret  = "secret1"
	baseURL = "https://qyapi.weixin.qq.com"

	pathToken   = string(catalog.GetToken)
	pathCreate  = string(catalog.TagCreate)
	pathUpdate  = string(catalog.TagUpdate)
	pathDelete  = string(catalog.TagDelete)
	pathGet     = string(catalog.TagGet)
	pathAdd     = string(catalog.TagAddUsers)
	pathDel     = string(catalog.TagDelUsers)
	pathList    = string(catalog.TagList)
	pathCTList  = string(catalog.CorpTagList)
	pathCTAdd   = string(catalog.CorpTagAdd)
	pathCTEdit  = string(catalog.CorpTagEdit)
	pathCTDel   = string(catalog.CorpTagDel)
	pathMarkTag = string(catalog.MarkTag)
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newServer returns a Server with one app of corpID, users u1..u3 and
// parties 1..3.
func newServer(t *testing.T, cfg mock.Config) *mock.Server {
	t.Helper()
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatalf("mock.New: %v", err)
	}
	srv.AddApp(corpID, secret)
	srv.AddUsers(corpID, "u1", "u2", "u3")
	srv.AddParties(corpID, 1, 2, 3)
	return srv
}

// answer is a decoded JSON answer.
type answer map[string]any

func (a answer) code() int {
	v, _ := a["errcode"].(float64)
	return int(v)
}

func (a answer) msg() string { return a.str("errmsg") }

func (a answer) str(key string) string {
	v, _ := a[key].(string)
	return v
}

func (a answer) num(key string) int {
	v, _ := a[key].(float64)
	return int(v)
}

func (a answer) list(key string) []any {
	v, _ := a[key].([]any)
	return v
}

func (a answer) obj(key string) answer {
	v, _ := a[key].(map[string]any)
	return answer(v)
}

// client reaches a Server through one transport.
type client struct {
	t    *testing.T
	http *http.Client
	base string
}

// transports are the ways a test can reach a Server.
func transports() []string { return []string{"httptest", "httpmock"} }

func connect(t *testing.T, srv *mock.Server, transport string) *client {
	t.Helper()
	switch transport {
	case "httptest":
		ts := srv.Start()
		t.Cleanup(ts.Close)
		return &client{t: t, http: ts.Client(), base: ts.URL}
	case "httpmock":
		mt := httpmock.NewMockTransport()
		srv.Register(mt, baseURL)
		return &client{t: t, http: &http.Client{Transport: mt}, base: baseURL}
	}
	t.Fatalf("unknown transport %q", transport)
	return nil
}

// env is one Server, its fake clock and a client.
type env struct {
	srv   *mock.Server
	clock *fakeClock
	c     *client
}

// eachTransport runs f once per transport, each with a new Server
// configured by cfg and driven by a fake clock.
func eachTransport(t *testing.T, cfg mock.Config, f func(t *testing.T, e env)) {
	t.Helper()
	for _, tr := range transports() {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			clock := newClock()
			cfg := cfg
			cfg.Now = clock.Now
			srv := newServer(t, cfg)
			f(t, env{srv: srv, clock: clock, c: connect(t, srv, tr)})
		})
	}
}

// do sends one request; it is safe to call from any goroutine.
func (c *client) do(method, path string, q url.Values, body string) (int, []byte, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// try sends one request and decodes its JSON answer; it is safe to call
// from any goroutine.
func (c *client) try(method, path string, q url.Values, body string) (answer, error) {
	status, b, err := c.do(method, path, q, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%s %s: HTTP %d %s", method, path, status, b)
	}
	var a answer
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%s %s: answer %q is not JSON: %w", method, path, b, err)
	}
	return a, nil
}

func (c *client) raw(method, path string, q url.Values, body string) (int, []byte) {
	c.t.Helper()
	status, b, err := c.do(method, path, q, body)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return status, b
}

func (c *client) call(method, path string, q url.Values, body string) answer {
	c.t.Helper()
	a, err := c.try(method, path, q, body)
	if err != nil {
		c.t.Fatal(err)
	}
	return a
}

func (c *client) getToken(corp, sec string) answer {
	c.t.Helper()
	return c.call(http.MethodGet, pathToken, url.Values{"corpid": {corp}, "corpsecret": {sec}}, "")
}

// token returns a valid token of the default app.
func (c *client) token() string {
	c.t.Helper()
	a := c.getToken(corpID, secret)
	if a.code() != 0 || a.str("access_token") == "" {
		c.t.Fatalf("gettoken: %v", a)
	}
	return a.str("access_token")
}

func (c *client) get(tok, path string, q url.Values) answer {
	c.t.Helper()
	q2 := url.Values{"access_token": {tok}}
	for k, v := range q {
		q2[k] = v
	}
	return c.call(http.MethodGet, path, q2, "")
}

// post sends body (a string as is, anything else as JSON).
func (c *client) post(tok, path string, body any) answer {
	c.t.Helper()
	return c.call(http.MethodPost, path, url.Values{"access_token": {tok}}, jsonBody(c.t, body))
}

func jsonBody(t *testing.T, body any) string {
	t.Helper()
	if s, ok := body.(string); ok {
		return s
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

func wantCode(t *testing.T, what string, a answer, code int) {
	t.Helper()
	if a.code() != code {
		t.Fatalf("%s: errcode %d (%s), want %d", what, a.code(), a.msg(), code)
	}
}

// direct calls a handler in-process; for synctest bubbles.
func direct(ctx context.Context, h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, method, target, strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func directCode(t *testing.T, h http.Handler, method, target, body string) int {
	t.Helper()
	rec := direct(context.Background(), h, method, target, body)
	var a answer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Errorf("%s: answer %q: %v", target, rec.Body.String(), err)
		return -999
	}
	return a.code()
}

func directToken(t *testing.T, h http.Handler, corp, sec string) string {
	t.Helper()
	rec := direct(context.Background(), h, http.MethodGet, pathToken+"?corpid="+corp+"&corpsecret="+sec, "")
	var a answer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || a.str("access_token") == "" {
		t.Fatalf("gettoken: %s", rec.Body.String())
	}
	return a.str("access_token")
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     mock.Config
		wantErr bool
	}{
		{"zero", mock.Config{}, false},
		{"everything set", mock.Config{Latency: time.Second, TokenTTL: time.Hour, Concurrency: -1,
			PerCustomerConcurrency: 3, Windows: []mock.Window{{Limit: 1, Period: time.Second}}, Seed: 7}, false},
		{"no windows", mock.Config{Windows: []mock.Window{}}, false},
		{"negative latency", mock.Config{Latency: -time.Millisecond}, true},
		{"jitter", mock.Config{Latency: 20 * time.Millisecond, LatencyJitter: 20 * time.Millisecond}, false},
		{"negative jitter", mock.Config{Latency: time.Second, LatencyJitter: -time.Millisecond}, true},
		{"jitter over latency", mock.Config{Latency: time.Millisecond, LatencyJitter: 2 * time.Millisecond}, true},
		{"negative ttl", mock.Config{TokenTTL: -time.Second}, true},
		{"zero limit", mock.Config{Windows: []mock.Window{{Limit: 0, Period: time.Minute}}}, true},
		{"negative limit", mock.Config{Windows: []mock.Window{{Limit: -1, Period: time.Minute}}}, true},
		{"zero period", mock.Config{Windows: []mock.Window{{Limit: 10, Period: 0}}}, true},
		{"second window bad", mock.Config{Windows: []mock.Window{{Limit: 10, Period: time.Minute}, {Limit: 1, Period: -time.Hour}}}, true},
		{"no IP windows", mock.Config{IPWindows: []mock.Window{}}, false},
		{"IP window zero limit", mock.Config{IPWindows: []mock.Window{{Limit: 0, Period: time.Minute}}}, true},
		{"IP window zero period", mock.Config{IPWindows: []mock.Window{{Limit: 5, Period: 0}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := mock.New(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New: err %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && srv == nil {
				t.Fatal("New returned nil Server and nil error")
			}
		})
	}
}

func TestGetToken(t *testing.T) {
	t.Parallel()
	eachTransport(t, mock.Config{TokenTTL: 100 * time.Second}, func(t *testing.T, e env) {
		c := e.c
		first := c.getToken(corpID, secret)
		wantCode(t, "gettoken", first, 0)
		tok1 := first.str("access_token")
		if first.msg() != "ok" || first.num("expires_in") != 100 {
			t.Fatalf("gettoken answer %v", first)
		}
		if _, err := hex.DecodeString(tok1); err != nil || len(tok1) < 64 {
			t.Fatalf("token %q is not 64+ hex characters", tok1)
		}

		e.clock.Advance(30*time.Second + 500*time.Millisecond)
		again := c.getToken(corpID, secret)
		if again.str("access_token") != tok1 || again.num("expires_in") != 69 {
			t.Fatalf("refetch within validity: %v, want the same token with expires_in 69", again)
		}
		wantCode(t, "call with live token", c.get(tok1, pathList, nil), 0)

		// A second app of the same corp has its own token.
		e.srv.AddApp(corpID, "secret2")
		tokApp2 := c.getToken(corpID, "secret2").str("access_token")
		if tokApp2 == "" || tokApp2 == tok1 {
			t.Fatalf("second app token %q, want a different token", tokApp2)
		}

		e.clock.Advance(70 * time.Second) // past 100 s
		wantCode(t, "call with expired token", c.get(tok1, pathList, nil), 42001)
		tok2 := c.token()
		if tok2 == tok1 {
			t.Fatal("gettoken after expiry returned the expired token")
		}
		wantCode(t, "call with new token", c.get(tok2, pathList, nil), 0)
		wantCode(t, "old token still expired", c.get(tok1, pathList, nil), 42001)

		e.srv.InvalidateTokens()
		wantCode(t, "call with invalidated token", c.get(tok2, pathList, nil), 40014)
		tok3 := c.token()
		if tok3 == tok2 {
			t.Fatal("gettoken after InvalidateTokens returned the invalidated token")
		}
		wantCode(t, "call with token after invalidation", c.get(tok3, pathList, nil), 0)

		st := e.srv.Stats()
		if st.GetTokenCalls != 5 {
			t.Errorf("GetTokenCalls = %d, want 5", st.GetTokenCalls)
		}
		if st.Calls[pathToken] != 5 || st.Calls[pathList] != 6 {
			t.Errorf("Calls = %v", st.Calls)
		}
		if st.Refusals[42001] != 2 || st.Refusals[40014] != 1 {
			t.Errorf("Refusals = %v", st.Refusals)
		}
	})
}

func TestGetTokenErrors(t *testing.T) {
	t.Parallel()
	eachTransport(t, mock.Config{}, func(t *testing.T, e env) {
		e.srv.AddUsers("wwnoapp", "u1") // a corp without any app
		tests := []struct {
			name, corp, secret string
			want               int
		}{
			{"wrong secret", corpID, "nope", 40001},
			{"unknown corp", "wwnobody", secret, 40013},
			{"corp without app", "wwnoapp", secret, 40013},
			{"missing corpid", "", secret, 41002},
			{"missing secret", corpID, "", 41004},
		}
		for _, tt := range tests {
			a := e.c.getToken(tt.corp, tt.secret)
			wantCode(t, tt.name, a, tt.want)
			wantMsg := fmt.Sprintf("more info at https://open.work.weixin.qq.com/devtool/query?e=%d", tt.want)
			if !strings.Contains(a.msg(), "hint: [") || !strings.Contains(a.msg(), "from ip: ") ||
				!strings.HasSuffix(a.msg(), wantMsg) {
				t.Errorf("%s: errmsg %q lacks WeCom's shape", tt.name, a.msg())
			}
		}
		wantCode(t, "missing token", e.c.call(http.MethodGet, pathList, nil, ""), 41001)
		wantCode(t, "unknown token", e.c.get("deadbeef", pathList, nil), 40014)
		if got := e.srv.Stats().GetTokenCalls; got != len(tests) {
			t.Errorf("GetTokenCalls = %d, want %d", got, len(tests))
		}
	})
}

func TestGetTokenIsNotLimited(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t, mock.Config{
			Latency: time.Hour,
			Windows: []mock.Window{{Limit: 1, Period: time.Hour}},
		})
		srv.SetFaults(mock.Faults{SystemBusy: 1})
		h := srv.Handler()
		start := time.Now()
		for range 5 {
			directToken(t, h, corpID, secret)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("gettoken took %v of latency, want 0", d)
		}
		if st := srv.Stats(); len(st.Refusals) != 0 {
			t.Errorf("Refusals = %v, want none", st.Refusals)
		}
	})
}

func TestUnknownPath(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{})
	c := connect(t, srv, "httptest")
	status, body := c.raw(http.MethodGet, "/cgi-bin/user/nope", nil, "")
	if status != http.StatusNotFound || json.Valid(body) {
		t.Errorf("unknown path: HTTP %d %q, want a plain 404", status, body)
	}
	// The same through Responder.
	req := httptest.NewRequest(http.MethodGet, baseURL+"/elsewhere", nil)
	resp, err := srv.Responder()(req)
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("Responder on unknown path: %v, %v", resp, err)
	}
	if got := srv.Stats().Calls; got["/cgi-bin/user/nope"] != 1 || got["/elsewhere"] != 1 {
		t.Errorf("Calls = %v", got)
	}
}

func TestRegisterWithPathPrefix(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{})
	mt := httpmock.NewMockTransport()
	srv.Register(mt, "https://proxy.example.com/wecom/")
	c := &client{t: t, http: &http.Client{Transport: mt}, base: "https://proxy.example.com/wecom"}
	wantCode(t, "list via prefix", c.get(c.token(), pathList, nil), 0)
	srv.Register(nil, baseURL) // must not panic
}

// step is one call of a stateful table test.
type step struct {
	name   string
	method string
	path   string
	query  url.Values
	body   any
	want   int
	check  func(t *testing.T, a answer)
}

func runSteps(t *testing.T, c *client, tok string, steps []step) {
	t.Helper()
	for _, s := range steps {
		var a answer
		if s.method == http.MethodGet {
			a = c.get(tok, s.path, s.query)
		} else {
			a = c.post(tok, s.path, s.body)
		}
		wantCode(t, s.name, a, s.want)
		if s.check != nil {
			s.check(t, a)
		}
	}
}

func wantMsgIs(msg string) func(*testing.T, answer) {
	return func(t *testing.T, a answer) {
		t.Helper()
		if a.msg() != msg {
			t.Errorf("errmsg %q, want %q", a.msg(), msg)
		}
	}
}

func wantTagID(id int) func(*testing.T, answer) {
	return func(t *testing.T, a answer) {
		t.Helper()
		if a.msg() != "created" || a.num("tagid") != id {
			t.Errorf("create answer %v, want created with tagid %d", a, id)
		}
	}
}

func wantInvalid(list string, parties ...int) func(*testing.T, answer) {
	return func(t *testing.T, a answer) {
		t.Helper()
		var got []int
		for _, p := range a.list("invalidparty") {
			got = append(got, int(p.(float64)))
		}
		if a.str("invalidlist") != list || !slices.Equal(got, parties) {
			t.Errorf("invalidlist %q invalidparty %v, want %q %v", a.str("invalidlist"), got, list, parties)
		}
		if list == "" {
			if _, ok := a["invalidlist"]; ok {
				t.Errorf("invalidlist present in %v", a)
			}
		}
	}
}

func q(tagid string) url.Values { return url.Values{"tagid": {tagid}} }

func TestContactTags(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("标", 33)
	eachTransport(t, mock.Config{}, func(t *testing.T, e env) {
		many := make([]string, 1001)
		for i := range many {
			many[i] = fmt.Sprintf("u%d", i)
		}
		manyParties := make([]int, 101)
		for i := range manyParties {
			manyParties[i] = i + 1
		}
		runSteps(t, e.c, e.c.token(), []step{
			{name: "create auto id", path: pathCreate, body: map[string]any{"tagname": "UI"}, want: 0, check: wantTagID(1)},
			{name: "create given id", path: pathCreate, body: map[string]any{"tagname": "Ops", "tagid": 10}, want: 0, check: wantTagID(10)},
			{name: "create next auto id", path: pathCreate, body: `{"tagname":"Dev"}`, want: 0, check: wantTagID(2)},
			{name: "create 32 runes", path: pathCreate, body: map[string]any{"tagname": long[:len(long)-len("标")]}, want: 0, check: wantTagID(3)},
			{name: "create duplicate name", path: pathCreate, body: map[string]any{"tagname": "UI"}, want: 40071},
			{name: "create taken id", path: pathCreate, body: map[string]any{"tagname": "New", "tagid": 10}, want: 40071},
			{name: "create empty name", path: pathCreate, body: map[string]any{"tagname": ""}, want: 40072},
			{name: "create 33 runes", path: pathCreate, body: map[string]any{"tagname": long}, want: 40072},
			{name: "create negative id", path: pathCreate, body: map[string]any{"tagname": "Neg", "tagid": -4}, want: 40068},
			{name: "create bad json", path: pathCreate, body: `{"tagname":`, want: 47001},
			{name: "create wrong type", path: pathCreate, body: `{"tagname":5}`, want: 47001},

			{name: "update", path: pathUpdate, body: map[string]any{"tagid": 1, "tagname": "UI design"}, want: 0, check: wantMsgIs("updated")},
			{name: "update same name", path: pathUpdate, body: map[string]any{"tagid": 1, "tagname": "UI design"}, want: 0},
			{name: "update unknown", path: pathUpdate, body: map[string]any{"tagid": 99, "tagname": "x"}, want: 40068},
			{name: "update missing id", path: pathUpdate, body: map[string]any{"tagname": "x"}, want: 41017},
			{name: "update to taken name", path: pathUpdate, body: map[string]any{"tagid": 1, "tagname": "Ops"}, want: 40071},
			{name: "update bad name", path: pathUpdate, body: map[string]any{"tagid": 1, "tagname": ""}, want: 40072},

			{name: "add partly invalid", path: pathAdd, body: map[string]any{"tagid": 1, "userlist": []string{"u1", "ghost", "u2", "u1", "nobody"}, "partylist": []int{1, 99}},
				want: 0, check: wantInvalid("ghost|nobody", 99)},
			{name: "add all valid", path: pathAdd, body: map[string]any{"tagid": 10, "userlist": []string{"u3"}},
				want: 0, check: wantInvalid("")},
			{name: "add all invalid", path: pathAdd, body: map[string]any{"tagid": 1, "userlist": []string{"ghost"}, "partylist": []int{42}}, want: 40070},
			{name: "add both empty", path: pathAdd, body: map[string]any{"tagid": 1}, want: 40070},
			{name: "add too many users", path: pathAdd, body: map[string]any{"tagid": 1, "userlist": many}, want: 81014},
			{name: "add too many parties", path: pathAdd, body: map[string]any{"tagid": 1, "partylist": manyParties}, want: 81014},
			{name: "add unknown tag", path: pathAdd, body: map[string]any{"tagid": 77, "userlist": []string{"u1"}}, want: 40068},
			{name: "add missing tag", path: pathAdd, body: map[string]any{"userlist": []string{"u1"}}, want: 41017},

			{name: "get", method: http.MethodGet, path: pathGet, query: q("1"), want: 0, check: func(t *testing.T, a answer) {
				want := []any{map[string]any{"userid": "u1", "name": "u1"}, map[string]any{"userid": "u2", "name": "u2"}}
				if a.str("tagname") != "UI design" || !reflect.DeepEqual(a.list("userlist"), want) ||
					!reflect.DeepEqual(a.list("partylist"), []any{1.0}) {
					t.Errorf("get answer %v", a)
				}
			}},
			{name: "get empty tag", method: http.MethodGet, path: pathGet, query: q("2"), want: 0, check: func(t *testing.T, a answer) {
				if a.list("userlist") == nil || a.list("partylist") == nil {
					t.Errorf("empty tag: lists should be [] in %v", a)
				}
			}},
			{name: "get unknown", method: http.MethodGet, path: pathGet, query: q("55"), want: 40068},
			{name: "get not a number", method: http.MethodGet, path: pathGet, query: q("abc"), want: 40068},
			{name: "get missing", method: http.MethodGet, path: pathGet, want: 41017},

			{name: "del partly invalid", path: pathDel, body: map[string]any{"tagid": 1, "userlist": []string{"u1", "u3"}, "partylist": []int{1, 2}},
				want: 0, check: func(t *testing.T, a answer) {
					wantMsgIs("deleted")(t, a)
					wantInvalid("u3", 2)(t, a)
				}},
			{name: "del all invalid", path: pathDel, body: map[string]any{"tagid": 1, "userlist": []string{"u3"}}, want: 40031},
			{name: "del both empty", path: pathDel, body: map[string]any{"tagid": 1}, want: 40031},
			{name: "del unknown tag", path: pathDel, body: map[string]any{"tagid": 404, "userlist": []string{"u2"}}, want: 40068},

			{name: "list", method: http.MethodGet, path: pathList, want: 0, check: func(t *testing.T, a answer) {
				var ids []int
				for _, it := range a.list("taglist") {
					ids = append(ids, int(it.(map[string]any)["tagid"].(float64)))
				}
				if !slices.Equal(ids, []int{1, 2, 3, 10}) {
					t.Errorf("taglist ids %v", ids)
				}
			}},
			{name: "delete", method: http.MethodGet, path: pathDelete, query: q("2"), want: 0, check: wantMsgIs("deleted")},
			{name: "delete again", method: http.MethodGet, path: pathDelete, query: q("2"), want: 40068},
			{name: "delete missing", method: http.MethodGet, path: pathDelete, want: 41017},
		})
		want := []mock.Tag{
			{ID: 1, Name: "UI design", Users: []string{"u2"}},
			{ID: 3, Name: long[:len(long)-len("标")]},
			{ID: 10, Name: "Ops", Users: []string{"u3"}},
		}
		if got := e.srv.Tags(corpID); !reflect.DeepEqual(got, want) {
			t.Errorf("Tags = %+v\nwant %+v", got, want)
		}
		if e.srv.Tags("wwother") != nil {
			t.Error("Tags of an unknown corp should be nil")
		}
	})
}

func TestContactTagLimit(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{})
	h := srv.Handler()
	tok := directToken(t, h, corpID, secret)
	for i := range 3000 {
		if code := directCode(t, h, http.MethodPost, pathCreate+"?access_token="+tok, fmt.Sprintf(`{"tagname":"t%d"}`, i)); code != 0 {
			t.Fatalf("create %d: errcode %d", i, code)
		}
	}
	if code := directCode(t, h, http.MethodPost, pathCreate+"?access_token="+tok, `{"tagname":"one too many"}`); code != 45024 {
		t.Errorf("3001st tag: errcode %d, want 45024", code)
	}
}

// group reads one tag_group object.
func group(a answer) (id, name string, tags []string) {
	for _, t := range a.list("tag") {
		tags = append(tags, t.(map[string]any)["name"].(string))
	}
	return a.str("group_id"), a.str("group_name"), tags
}

func groupsOf(a answer) []string {
	var out []string
	for _, g := range a.list("tag_group") {
		_, name, tags := group(answer(g.(map[string]any)))
		out = append(out, name+":"+strings.Join(tags, ","))
	}
	return out
}

func tagIDs(a answer) map[string]string {
	ids := make(map[string]string)
	for _, g := range a.list("tag_group") {
		for _, t := range answer(g.(map[string]any)).list("tag") {
			m := t.(map[string]any)
			ids[m["name"].(string)] = m["id"].(string)
		}
	}
	return ids
}

// addedIDs maps tag names to ids in an add_corp_tag answer.
func addedIDs(a answer) map[string]string {
	return tagIDs(answer{"tag_group": []any{map[string]any(a.obj("tag_group"))}})
}

func TestCustomerTags(t *testing.T) {
	t.Parallel()
	eachTransport(t, mock.Config{}, func(t *testing.T, e env) {
		c := e.c
		tok := c.token()
		type tagSpec struct {
			Name  string `json:"name"`
			Order uint32 `json:"order,omitempty"`
		}

		a := c.post(tok, pathCTAdd, map[string]any{"group_name": "Stage", "order": 5,
			"tag": []tagSpec{{"lead", 1}, {"won", 2}}, "agentid": 1000014})
		wantCode(t, "add new group", a, 0)
		g := a.obj("tag_group")
		stageID, name, tags := group(g)
		if !strings.HasPrefix(stageID, "et") || name != "Stage" || !slices.Equal(tags, []string{"lead", "won"}) ||
			g.num("order") != 5 || int64(g.num("create_time")) != e.clock.Now().Unix() {
			t.Fatalf("add answer %v", a)
		}

		a = c.post(tok, pathCTAdd, map[string]any{"group_name": "Stage", "tag": []tagSpec{{Name: "lost"}}})
		wantCode(t, "add to group by name", a, 0)
		if id, _, tags := group(a.obj("tag_group")); id != stageID || !slices.Equal(tags, []string{"lost"}) {
			t.Fatalf("group_name reuse: %v", a)
		}
		a = c.post(tok, pathCTAdd, map[string]any{"group_id": stageID, "tag": []tagSpec{{Name: "churned"}}})
		wantCode(t, "add to group by id", a, 0)
		if id, _, tags := group(a.obj("tag_group")); id != stageID || !slices.Equal(tags, []string{"churned"}) {
			t.Fatalf("group_id add: %v", a)
		}
		a = c.post(tok, pathCTAdd, map[string]any{"group_name": "Source", "order": 9, "tag": []tagSpec{{Name: "web"}}})
		wantCode(t, "add second group", a, 0)
		sourceID, _, _ := group(a.obj("tag_group"))

		all := c.post(tok, pathCTList, map[string]any{})
		wantCode(t, "list all", all, 0)
		if got, want := groupsOf(all), []string{"Source:web", "Stage:won,lead,lost,churned"}; !slices.Equal(got, want) {
			t.Fatalf("list all = %v, want %v", got, want)
		}
		ids := tagIDs(all)
		if got := groupsOf(c.post(tok, pathCTList, "")); len(got) != 2 {
			t.Errorf("list with empty body = %v", got)
		}
		byTag := c.post(tok, pathCTList, map[string]any{"tag_id": []string{ids["lead"], ids["web"], "etnone"}})
		if got, want := groupsOf(byTag), []string{"Source:web", "Stage:lead"}; !slices.Equal(got, want) {
			t.Errorf("list by tag = %v, want %v", got, want)
		}
		byGroup := c.post(tok, pathCTList, map[string]any{"group_id": []string{stageID}, "tag_id": []string{ids["web"]}})
		if got, want := groupsOf(byGroup), []string{"Stage:won,lead,lost,churned"}; !slices.Equal(got, want) {
			t.Errorf("list by group (group_id wins) = %v, want %v", got, want)
		}

		runSteps(t, c, tok, []step{
			{name: "add unknown group id", path: pathCTAdd, body: map[string]any{"group_id": "etnope", "tag": []tagSpec{{Name: "x"}}}, want: 40068},
			{name: "add without group", path: pathCTAdd, body: map[string]any{"tag": []tagSpec{{Name: "x"}}}, want: 40068},
			{name: "add existing name", path: pathCTAdd, body: map[string]any{"group_id": stageID, "tag": []tagSpec{{Name: "lead"}}}, want: 40071},
			{name: "add duplicate in request", path: pathCTAdd, body: map[string]any{"group_name": "New", "tag": []tagSpec{{Name: "a"}, {Name: "a"}}}, want: 40071},
			{name: "add long tag name", path: pathCTAdd, body: map[string]any{"group_id": stageID, "tag": []tagSpec{{Name: strings.Repeat("x", 31)}}}, want: 40072},
			{name: "add long group name", path: pathCTAdd, body: map[string]any{"group_name": strings.Repeat("组", 31), "tag": []tagSpec{{Name: "x"}}}, want: 40072},
			{name: "add no tags", path: pathCTAdd, body: map[string]any{"group_id": stageID}, want: 40058},
			{name: "add bad json", path: pathCTAdd, body: `{"group_id":`, want: 47001},
			{name: "edit unknown", path: pathCTEdit, body: map[string]any{"id": "etnope", "name": "x"}, want: 40068},
			{name: "edit without id", path: pathCTEdit, body: map[string]any{"name": "x"}, want: 40068},
			{name: "edit to sibling name", path: pathCTEdit, body: map[string]any{"id": ids["lead"], "name": "won"}, want: 40071},
			{name: "edit group to taken name", path: pathCTEdit, body: map[string]any{"id": sourceID, "name": "Stage"}, want: 40071},
			{name: "edit long name", path: pathCTEdit, body: map[string]any{"id": ids["lead"], "name": strings.Repeat("x", 31)}, want: 40072},
			{name: "edit tag", path: pathCTEdit, body: map[string]any{"id": ids["lead"], "name": "hot lead", "order": 7}, want: 0},
			{name: "edit group", path: pathCTEdit, body: map[string]any{"id": sourceID, "name": "Origin"}, want: 0},
			{name: "del both empty", path: pathCTDel, body: map[string]any{}, want: 40068},
			{name: "del unknown tag", path: pathCTDel, body: map[string]any{"tag_id": []string{ids["won"], "etnope"}}, want: 40068},
			{name: "del unknown group", path: pathCTDel, body: map[string]any{"group_id": []string{"etnope"}}, want: 40068},
			{name: "mark without userid", path: pathMarkTag, body: map[string]any{"external_userid": "wmA", "add_tag": []string{ids["won"]}}, want: 41009},
			{name: "mark without external", path: pathMarkTag, body: map[string]any{"userid": "u1", "add_tag": []string{ids["won"]}}, want: 40096},
			{name: "mark nothing", path: pathMarkTag, body: map[string]any{"userid": "u1", "external_userid": "wmA"}, want: 40068},
			{name: "mark unknown tag", path: pathMarkTag, body: map[string]any{"userid": "u1", "external_userid": "wmA", "add_tag": []string{ids["won"], "etnope"}}, want: 40068},
			{name: "mark", path: pathMarkTag, body: map[string]any{"userid": "u1", "external_userid": "wmA", "add_tag": []string{ids["won"], ids["web"], ids["lead"]}}, want: 0},
			{name: "mark add and remove", path: pathMarkTag, body: map[string]any{"userid": "u1", "external_userid": "wmA", "add_tag": []string{ids["lost"]}, "remove_tag": []string{ids["won"]}}, want: 0},
			{name: "mark other customer", path: pathMarkTag, body: map[string]any{"userid": "u2", "external_userid": "wmA", "add_tag": []string{ids["won"]}}, want: 0},
		})

		wantGroups := []mock.CorpTagGroup{
			{ID: sourceID, Name: "Origin", Order: 9, Tags: []mock.CorpTag{{ID: ids["web"], Name: "web"}}},
			{ID: stageID, Name: "Stage", Order: 5, Tags: []mock.CorpTag{
				{ID: ids["lead"], Name: "hot lead", Order: 7},
				{ID: ids["won"], Name: "won", Order: 2},
				{ID: ids["lost"], Name: "lost"},
				{ID: ids["churned"], Name: "churned"},
			}},
		}
		if got := e.srv.CorpTagGroups(corpID); !reflect.DeepEqual(got, wantGroups) {
			t.Fatalf("CorpTagGroups = %+v\nwant %+v", got, wantGroups)
		}
		wantMarks := []string{ids["lead"], ids["lost"], ids["web"]}
		slices.Sort(wantMarks)
		if got := e.srv.Marks(corpID, "u1", "wmA"); !slices.Equal(got, wantMarks) {
			t.Errorf("Marks = %v, want %v", got, wantMarks)
		}
		if got := e.srv.Stats().MarkCalls; got != 3 {
			t.Errorf("MarkCalls = %d, want 3", got)
		}

		// Deleting a group's last tag removes the group and the tag's marks.
		wantCode(t, "del last tag", c.post(tok, pathCTDel, map[string]any{"tag_id": []string{ids["web"]}}), 0)
		if got := groupsOf(c.post(tok, pathCTList, map[string]any{})); !slices.Equal(got, []string{"Stage:hot lead,won,lost,churned"}) {
			t.Errorf("after deleting the last tag of Origin: %v", got)
		}
		wantCode(t, "edit deleted group", c.post(tok, pathCTEdit, map[string]any{"id": sourceID, "name": "x"}), 40068)
		wantCode(t, "del group", c.post(tok, pathCTDel, map[string]any{"group_id": []string{stageID}, "tag_id": []string{ids["won"]}}), 0)
		if got := e.srv.CorpTagGroups(corpID); len(got) != 0 {
			t.Errorf("CorpTagGroups after deleting everything = %+v", got)
		}
		if got := e.srv.Marks(corpID, "u1", "wmA"); got != nil {
			t.Errorf("Marks after deleting the tags = %v", got)
		}
		wantCode(t, "mark deleted tag", c.post(tok, pathMarkTag, map[string]any{"userid": "u1", "external_userid": "wmA", "add_tag": []string{ids["won"]}}), 40068)
	})
}

func TestCustomerTagLimit(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{})
	h := srv.Handler()
	tok := directToken(t, h, corpID, secret)
	tags := func(prefix string, n int) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`{"name":"%s%d"}`, prefix, i))
		}
		return `{"group_name":"` + prefix + `","tag":[` + strings.Join(parts, ",") + `]}`
	}
	target := pathCTAdd + "?access_token=" + tok
	if code := directCode(t, h, http.MethodPost, target, tags("a", 2999)); code != 0 {
		t.Fatalf("2999 tags: errcode %d", code)
	}
	if code := directCode(t, h, http.MethodPost, target, tags("b", 2)); code != 40126 {
		t.Errorf("3001 tags: errcode %d, want 40126", code)
	}
	if code := directCode(t, h, http.MethodPost, target, tags("c", 1)); code != 0 {
		t.Errorf("3000th tag: errcode %d, want 0", code)
	}
}

func TestInvalidJSON(t *testing.T) {
	t.Parallel()
	eachTransport(t, mock.Config{}, func(t *testing.T, e env) {
		tok := e.c.token()
		for _, path := range []string{pathCreate, pathUpdate, pathAdd, pathDel, pathCTList, pathCTAdd, pathCTEdit, pathCTDel, pathMarkTag} {
			for _, body := range []string{`{"tagid":`, `[1,2]`, `not json`} {
				wantCode(t, path+" "+body, e.c.post(tok, path, body), 47001)
			}
		}
	})
}

// limitedCall is one call of a limited API.
type limitedCall struct {
	method, path string
	body         func(i int) string // i is the caller's index; nil for GET
}

// limitedCalls returns one call per limited API (a different customer per
// caller for mark_tag).
func limitedCalls() []limitedCall {
	return []limitedCall{
		{http.MethodPost, pathCreate, func(i int) string { return fmt.Sprintf(`{"tagname":"t%d"}`, i) }},
		{http.MethodPost, pathUpdate, func(int) string { return `{"tagid":1,"tagname":"x"}` }},
		{http.MethodGet, pathDelete, nil},
		{http.MethodGet, pathGet, nil},
		{http.MethodPost, pathAdd, func(int) string { return `{"tagid":1,"userlist":["u1"]}` }},
		{http.MethodPost, pathDel, func(int) string { return `{"tagid":1,"userlist":["u1"]}` }},
		{http.MethodGet, pathList, nil},
		{http.MethodPost, pathCTList, func(int) string { return `{}` }},
		{http.MethodPost, pathCTAdd, func(i int) string { return fmt.Sprintf(`{"group_name":"g","tag":[{"name":"n%d"}]}`, i) }},
		{http.MethodPost, pathCTEdit, func(int) string { return `{"id":"etx","name":"x"}` }},
		{http.MethodPost, pathCTDel, func(int) string { return `{"tag_id":["etx"]}` }},
		{http.MethodPost, pathMarkTag, func(i int) string {
			return fmt.Sprintf(`{"userid":"u1","external_userid":"wm%d","add_tag":["etx"]}`, i)
		}},
	}
}

func TestConcurrencyLimitEveryTagAPI(t *testing.T) {
	t.Parallel()
	for _, call := range limitedCalls() {
		t.Run(call.path, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t, mock.Config{Latency: time.Second})
				h := srv.Handler()
				target := call.path + "?access_token=" + directToken(t, h, corpID, secret) + "&tagid=1"
				body := func(i int) string {
					if call.body == nil {
						return ""
					}
					return call.body(i)
				}
				codes := make(chan int, 5)
				for i := range 5 {
					go func() { codes <- directCode(t, h, call.method, target, body(i)) }()
				}
				synctest.Wait() // all five are waiting out their latency
				start := time.Now()
				if code := directCode(t, h, call.method, target, body(5)); code != 45033 {
					t.Errorf("6th concurrent call: errcode %d, want 45033", code)
				}
				if d := time.Since(start); d != 0 {
					t.Errorf("45033 came after %v, want at once", d)
				}
				for range 5 {
					if code := <-codes; code == 45033 {
						t.Error("one of the first five calls got 45033")
					}
				}
				st := srv.Stats()
				if st.MaxInFlight[call.path] != 5 || st.Refusals[45033] != 1 {
					t.Errorf("MaxInFlight %v, Refusals %v", st.MaxInFlight, st.Refusals)
				}
			})
		})
	}
}

func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t, mock.Config{Latency: time.Second})
		srv.AddApp("wwcorp2", "secret2")
		h := srv.Handler()
		tok := directToken(t, h, corpID, secret)
		tok2 := directToken(t, h, "wwcorp2", "secret2")
		list := pathList + "?access_token="

		codes := make(chan int, 7)
		for range 5 {
			go func() { codes <- directCode(t, h, http.MethodGet, list+tok, "") }()
		}
		synctest.Wait()
		if code := directCode(t, h, http.MethodGet, list+tok, ""); code != 45033 {
			t.Fatalf("6th call: errcode %d, want 45033", code)
		}
		// Another corp, and another API of the same corp, are not affected.
		go func() { codes <- directCode(t, h, http.MethodGet, list+tok2, "") }()
		go func() { codes <- directCode(t, h, http.MethodGet, pathGet+"?tagid=9&access_token="+tok, "") }()
		synctest.Wait()
		start := time.Now()
		var got []int
		for range 7 {
			got = append(got, <-codes)
		}
		slices.Sort(got)
		if want := []int{0, 0, 0, 0, 0, 0, 40068}; !slices.Equal(got, want) {
			t.Errorf("codes %v, want %v", got, want)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("calls ended after %v, want the 1s latency", d)
		}
		// Slots are released: five more calls are admitted.
		for range 5 {
			go func() { codes <- directCode(t, h, http.MethodGet, list+tok, "") }()
		}
		for range 5 {
			if code := <-codes; code != 0 {
				t.Errorf("call after release: errcode %d", code)
			}
		}
		st := srv.Stats()
		if st.MaxInFlight[pathList] != 5 || st.MaxInFlight[pathGet] != 1 || st.Refusals[45033] != 1 {
			t.Errorf("MaxInFlight %v, Refusals %v", st.MaxInFlight, st.Refusals)
		}
	})
}

func TestConcurrencyConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		concurrency  int
		callers      int
		wantRefusals int
	}{
		{"limit 2", 2, 4, 2},
		{"unlimited", -1, 20, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t, mock.Config{Latency: time.Second, Concurrency: tt.concurrency})
				h := srv.Handler()
				target := pathList + "?access_token=" + directToken(t, h, corpID, secret)
				codes := make(chan int, tt.callers)
				for range tt.callers {
					go func() { codes <- directCode(t, h, http.MethodGet, target, "") }()
				}
				refused := 0
				for range tt.callers {
					if <-codes == 45033 {
						refused++
					}
				}
				if refused != tt.wantRefusals {
					t.Errorf("%d refused, want %d", refused, tt.wantRefusals)
				}
				if got, want := srv.Stats().MaxInFlight[pathList], tt.callers-tt.wantRefusals; got != want {
					t.Errorf("MaxInFlight %d, want %d", got, want)
				}
			})
		})
	}
}

func TestPerCustomerConcurrency(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		perCustomer int
		wantSecond  int
	}{
		{"default 1", 0, 45033},
		{"unlimited", -1, 0},
		{"two", 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(t, mock.Config{PerCustomerConcurrency: tt.perCustomer})
				h := srv.Handler()
				tok := directToken(t, h, corpID, secret)
				rec := direct(context.Background(), h, http.MethodPost, pathCTAdd+"?access_token="+tok,
					`{"group_name":"g","tag":[{"name":"a"},{"name":"b"}]}`)
				var added answer
				if err := json.Unmarshal(rec.Body.Bytes(), &added); err != nil || added.code() != 0 {
					t.Fatalf("add_corp_tag: %s", rec.Body.String())
				}
				ids := addedIDs(added)
				srv.SetLatency(time.Second)

				mark := func(user, ext, tag string) int {
					return directCode(t, h, http.MethodPost, pathMarkTag+"?access_token="+tok,
						fmt.Sprintf(`{"userid":%q,"external_userid":%q,"add_tag":[%q]}`, user, ext, tag))
				}
				codes := make(chan int, 3)
				go func() { codes <- mark("u1", "wmA", ids["a"]) }()
				synctest.Wait()
				second := make(chan int, 1)
				go func() { second <- mark("u1", "wmA", ids["b"]) }()
				go func() { codes <- mark("u1", "wmB", ids["a"]) }() // other customer
				go func() { codes <- mark("u2", "wmA", ids["a"]) }() // same customer, other member
				if got := <-second; got != tt.wantSecond {
					t.Errorf("second concurrent mark of the same customer: errcode %d, want %d", got, tt.wantSecond)
				}
				for range 3 {
					if code := <-codes; code != 0 {
						t.Errorf("mark: errcode %d", code)
					}
				}
				wantMarks := []string{ids["a"]}
				if tt.wantSecond == 0 {
					wantMarks = []string{ids["a"], ids["b"]}
					slices.Sort(wantMarks)
				}
				if got := srv.Marks(corpID, "u1", "wmA"); !slices.Equal(got, wantMarks) {
					t.Errorf("Marks = %v, want %v", got, wantMarks)
				}
				if got, want := srv.Stats().MarkCalls, 3+btoi(tt.wantSecond == 0); got != want {
					t.Errorf("MarkCalls = %d, want %d", got, want)
				}
			})
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A client that hangs up does not end its call: as at WeCom, the call stays
// in flight (holding its slot) for its whole service time and is applied.
func TestHungUpCallStaysInFlight(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t, mock.Config{Latency: time.Hour, Concurrency: 1})
		h := srv.Handler()
		tok := directToken(t, h, corpID, secret)
		target := pathCreate + "?access_token=" + tok

		// Through httpmock the client sees its context's error at once.
		mt := httpmock.NewMockTransport()
		srv.Register(mt, baseURL)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+target, strings.NewReader(`{"tagname":"late"}`))
		start := time.Now()
		if _, err := (&http.Client{Transport: mt}).Do(req); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("httpmock client: err %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("client returned after %v, want 1s (its deadline)", d)
		}

		// The abandoned call still holds the only slot.
		second := make(chan int, 1)
		go func() { second <- directCode(t, h, http.MethodPost, target, `{"tagname":"second"}`) }()
		if code := <-second; code != 45033 {
			t.Errorf("call while the abandoned one runs: errcode %d, want 45033", code)
		}
		if got := srv.Tags(corpID); len(got) != 0 {
			t.Errorf("applied before its service time: %+v", got)
		}

		// Once its hour has passed it was applied and its slot is free.
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := srv.Tags(corpID); len(got) != 1 || got[0].Name != "late" {
			t.Errorf("tags after the service time = %+v, want the abandoned call's tag", got)
		}
		srv.SetLatency(0)
		if code := directCode(t, h, http.MethodPost, target, `{"tagname":"now"}`); code != 0 {
			t.Errorf("call after the abandoned one ended: errcode %d", code)
		}
	})
}

func TestRateWindows(t *testing.T) {
	t.Parallel()
	type rstep struct {
		advance time.Duration
		corp    string // "" means corpID
		path    string // "" means pathList
		want    int
	}
	tests := []struct {
		name    string
		windows []mock.Window
		steps   []rstep
	}{
		{
			name:    "sliding minute",
			windows: []mock.Window{{Limit: 3, Period: time.Minute}},
			steps: []rstep{
				{want: 0},
				{advance: 20 * time.Second, want: 0},
				{advance: 20 * time.Second, want: 0},     // t=40s: 3 calls in the window
				{advance: 10 * time.Second, want: 45009}, // t=50s: over, blocked until 110s
				{path: pathGet, want: 40068},             // another API has its own window
				{corp: "wwcorp2", want: 0},               // another corp too
				{advance: 40 * time.Second, want: 45009}, // t=90s: window (30,90] holds 1 call, still blocked
				{advance: 19 * time.Second, want: 45009}, // t=109s
				{advance: time.Second, want: 0},          // t=110s: block over, window (50,110] empty
				{want: 0},
				{advance: 30 * time.Second, want: 0},                     // t=140s: window (80,140] holds 3 calls
				{want: 45009},                                            // blocked until 200s
				{advance: 10 * time.Second, want: 45009},                 // t=150s: refused, not logged
				{advance: 50*time.Second - time.Nanosecond, want: 45009}, // the block lasts the whole period
				{advance: time.Nanosecond, want: 0},                      // t=200s: window (140,200]
				{want: 0},
				{want: 0}, // three calls at 200s: the refused call at 150s was not counted
				{want: 45009},
			},
		},
		{
			name:    "minute and hour",
			windows: []mock.Window{{Limit: 2, Period: time.Minute}, {Limit: 3, Period: time.Hour}},
			steps: []rstep{
				{want: 0}, {want: 0},
				{want: 45009}, // minute window: blocked 60s
				{advance: time.Minute, want: 0},
				{advance: time.Minute, want: 45009},             // t=2m: the hour holds 3 calls, blocked 1h
				{advance: time.Hour - time.Second, want: 45009}, // t=1h1m59s
				{advance: time.Second, want: 0},                 // t=1h2m
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachTransport(t, mock.Config{Windows: tt.windows}, func(t *testing.T, e env) {
				e.srv.AddApp("wwcorp2", "secret2")
				tokens := map[string]string{corpID: e.c.token(), "wwcorp2": e.c.getToken("wwcorp2", "secret2").str("access_token")}
				refused := 0
				for i, s := range tt.steps {
					e.clock.Advance(s.advance)
					corp, path := cmpOr(s.corp, corpID), cmpOr(s.path, pathList)
					a := e.c.get(tokens[corp], path, q("5"))
					wantCode(t, fmt.Sprintf("step %d", i), a, s.want)
					if s.want == 45009 {
						refused++
						if !strings.HasPrefix(a.msg(), "api freq out of limit") {
							t.Errorf("step %d: errmsg %q", i, a.msg())
						}
					}
				}
				if got := e.srv.Stats().Refusals[45009]; got != refused {
					t.Errorf("Refusals[45009] = %d, want %d", got, refused)
				}
				// gettoken is not rate limited.
				for range 5 {
					e.c.token()
				}
			})
		})
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestNoWindows(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{Windows: []mock.Window{}})
	h := srv.Handler()
	target := pathList + "?access_token=" + directToken(t, h, corpID, secret)
	for i := range 200 {
		if code := directCode(t, h, http.MethodGet, target, ""); code != 0 {
			t.Fatalf("call %d: errcode %d", i, code)
		}
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		faults      mock.Faults
		wantStatus  int
		wantJSON    bool
		wantBody    string // exact, when set
		wantApplied bool
	}{
		{"system busy", mock.Faults{SystemBusy: 1}, http.StatusOK, true, `{"errcode":-1,"errmsg":"system busy"}`, false},
		{"http 502", mock.Faults{HTTP5xx: 1}, http.StatusBadGateway, false, "", false},
		{"malformed", mock.Faults{Malformed: 1}, http.StatusOK, false, "", true},
		{"none", mock.Faults{}, http.StatusOK, true, "", true},
		{"out of range clamped", mock.Faults{SystemBusy: -3, HTTP5xx: 0}, http.StatusOK, true, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachTransport(t, mock.Config{}, func(t *testing.T, e env) {
				e.srv.SetFaults(tt.faults)
				tok := e.c.token() // gettoken is never faulted
				status, body := e.c.raw(http.MethodPost, pathCreate, url.Values{"access_token": {tok}}, `{"tagname":"VIP"}`)
				if status != tt.wantStatus || json.Valid(body) != tt.wantJSON {
					t.Fatalf("HTTP %d %q, want HTTP %d, valid JSON %v", status, body, tt.wantStatus, tt.wantJSON)
				}
				if tt.wantBody != "" && string(body) != tt.wantBody {
					t.Errorf("body %q, want %q", body, tt.wantBody)
				}
				if applied := len(e.srv.Tags(corpID)) == 1; applied != tt.wantApplied {
					t.Errorf("applied = %v, want %v", applied, tt.wantApplied)
				}
				st := e.srv.Stats()
				if st.Calls[pathCreate] != 1 || st.GetTokenCalls != 1 {
					t.Errorf("Stats = %+v", st)
				}
				if tt.faults.SystemBusy == 1 && st.Refusals[-1] != 1 {
					t.Errorf("Refusals = %v, want one -1", st.Refusals)
				}
			})
		})
	}
}

func TestSlowFault(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(t, mock.Config{Latency: time.Second})
		srv.SetFaults(mock.Faults{Slow: 1, SlowLatency: 3 * time.Second})
		h := srv.Handler()
		target := pathList + "?access_token=" + directToken(t, h, corpID, secret)
		start := time.Now()
		if code := directCode(t, h, http.MethodGet, target, ""); code != 0 {
			t.Fatalf("errcode %d", code)
		}
		if d := time.Since(start); d != 4*time.Second {
			t.Errorf("slow call took %v, want 4s", d)
		}
		srv.SetFaults(mock.Faults{})
		start = time.Now()
		directCode(t, h, http.MethodGet, target, "")
		if d := time.Since(start); d != time.Second {
			t.Errorf("normal call took %v, want 1s", d)
		}
	})
}

func TestFaultsAreReproducible(t *testing.T) {
	t.Parallel()
	run := func(seed int64) []int {
		srv := newServer(t, mock.Config{Seed: seed})
		srv.SetFaults(mock.Faults{SystemBusy: 0.5})
		h := srv.Handler()
		target := pathList + "?access_token=" + directToken(t, h, corpID, secret)
		var codes []int
		for range 1000 {
			codes = append(codes, directCode(t, h, http.MethodGet, target, ""))
		}
		return codes
	}
	a, b := run(42), run(42)
	if !slices.Equal(a, b) {
		t.Fatal("two servers with the same seed faulted differently")
	}
	busy := 0
	for _, code := range a {
		if code == -1 {
			busy++
		}
	}
	if busy < 400 || busy > 600 {
		t.Errorf("%d of 1000 calls busy with SystemBusy 0.5", busy)
	}
	if !slices.Equal(run(0), run(1)) {
		t.Error("seed 0 should mean seed 1")
	}
}

func TestStatsCopyAndReset(t *testing.T) {
	t.Parallel()
	eachTransport(t, mock.Config{}, func(t *testing.T, e env) {
		tok := e.c.token()
		wantCode(t, "bad", e.c.get(tok, pathGet, q("1")), 40068)
		wantCode(t, "mark", e.c.post(tok, pathCTAdd, `{"group_name":"g","tag":[{"name":"a"}]}`), 0)
		st := e.srv.Stats()
		st.Calls[pathGet] = 100
		st.Refusals[1] = 1
		st2 := e.srv.Stats()
		if st2.Calls[pathGet] != 1 || st2.Refusals[40068] != 1 || len(st2.Refusals) != 1 ||
			st2.MaxInFlight[pathGet] != 1 || st2.GetTokenCalls != 1 {
			t.Errorf("Stats = %+v", st2)
		}
		e.srv.ResetStats()
		st3 := e.srv.Stats()
		if len(st3.Calls) != 0 || len(st3.Refusals) != 0 || len(st3.MaxInFlight) != 0 || st3.GetTokenCalls != 0 ||
			e.srv.Stats().MarkCalls != 0 || st3.Calls == nil {
			t.Errorf("after ResetStats: %+v", st3)
		}
	})
}

// TestManyCallers drives hundreds of concurrent callers through a real
// HTTP server; run with -race.
func TestManyCallers(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{Concurrency: -1, PerCustomerConcurrency: -1})
	c := connect(t, srv, "httptest")
	tok := c.token()
	const callers = 200
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			post := func(path, body string) (answer, bool) {
				a, err := c.try(http.MethodPost, path, url.Values{"access_token": {tok}}, body)
				if err != nil || a.code() != 0 {
					t.Errorf("%s: %v %v", path, a, err)
					return nil, false
				}
				return a, true
			}
			if _, ok := post(pathCreate, fmt.Sprintf(`{"tagname":"t%d"}`, i)); !ok {
				return
			}
			a, ok := post(pathCTAdd, fmt.Sprintf(`{"group_name":"G","tag":[{"name":"n%d"}]}`, i))
			if !ok {
				return
			}
			id := addedIDs(a)[fmt.Sprintf("n%d", i)]
			post(pathMarkTag, fmt.Sprintf(`{"userid":"u1","external_userid":"wmA","add_tag":[%q]}`, id))
		})
	}
	wg.Wait()
	if got := len(srv.Tags(corpID)); got != callers {
		t.Errorf("%d tags, want %d", got, callers)
	}
	groups := srv.CorpTagGroups(corpID)
	if len(groups) != 1 || len(groups[0].Tags) != callers {
		t.Errorf("%d groups, want 1 with %d tags", len(groups), callers)
	}
	if got := len(srv.Marks(corpID, "u1", "wmA")); got != callers || srv.Stats().MarkCalls != callers {
		t.Errorf("%d marks, %d mark calls, want %d", got, srv.Stats().MarkCalls, callers)
	}

	// With the default limit, parallel callers are either served or refused
	// with 45033, and never more than 5 are in flight.
	srv2 := newServer(t, mock.Config{})
	c2 := connect(t, srv2, "httptest")
	tok2 := c2.token()
	var mu sync.Mutex
	codes := map[int]int{}
	for range callers {
		wg.Go(func() {
			a, err := c2.try(http.MethodGet, pathList, url.Values{"access_token": {tok2}}, "")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			codes[a.code()]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[0]+codes[45033] != callers {
		t.Errorf("codes %v", codes)
	}
	if st := srv2.Stats(); st.MaxInFlight[pathList] > 5 || st.Refusals[45033] != codes[45033] {
		t.Errorf("MaxInFlight %v, Refusals %v, codes %v", st.MaxInFlight, st.Refusals, codes)
	}
}
