package wecom_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
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

// doToken is the token source of a user who calls unwrapped through Do.
func doToken() wecom.Option {
	return wecom.WithTokenSource(wecom.TokenSourceFunc(func(context.Context) (wecom.Token, error) {
		return wecom.Token{Value: "tok-do-rules", ExpiresAt: time.Now().Add(time.Hour)}, nil
	}))
}

// A limit added with WithRule that counts what a request says (its
// members, the resource it edits, its units), on a path whose requests
// nothing reads it from, is refused by New, the error naming the rule:
// Do would otherwise send every such call counted against none of it.
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
			c, err := wecom.New("wwdorules", "", wecom.WithBaseURL(url), doToken(), wecom.WithAgentID(1000002), wecom.WithRule(tc.path, tc.rule))
			if err == nil {
				err = c.Do(context.Background(), http.MethodPost, tc.path, nil, map[string]any{"x": 1}, nil)
			}
			if !errors.Is(err, wecom.ErrInvalidRequest) || !strings.Contains(err.Error(), tc.rule.Name) || !strings.Contains(err.Error(), "WithKeys") {
				t.Errorf("New or Do = %v, want ErrInvalidRequest naming the rule %q and WithKeys", err, tc.rule.Name)
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// A typed method whose endpoint reads its keys, given with WithRule a
// limit its keys do not say (members, for mark_tag that names a customer),
// fails naming the rule rather than send a call it cannot count.
func TestTypedCallRefusesRulesItCannotCount(t *testing.T) {
	t.Parallel()
	url, _, calls := inFlightServer(t, 0)
	rule := catalog.Rule{Name: "member-minute", Scope: catalog.ScopeAppMember, Group: "msg", Limit: 30, Per: catalog.Minute}
	c := setup(t, wecom.WithBaseURL(url), doToken(), wecom.WithAgentID(1000002), wecom.WithRule(catalog.MarkTag.Path(), rule))
	err := c.CustomerTags.Mark(context.Background(), wecom.MarkTagRequest{UserID: "u", ExternalUserID: "wm", AddTags: []string{"et1"}})
	if !errors.Is(err, wecom.ErrInvalidRequest) || !strings.Contains(err.Error(), rule.Name) {
		t.Errorf("CustomerTags.Mark = %v, want ErrInvalidRequest naming the rule %q", err, rule.Name)
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
	// 100 ms a call: long enough that two overlap on a loaded machine.
	url, peak, calls := inFlightServer(t, 100*time.Millisecond)
	c := setup(t, wecom.WithBaseURL(url), doToken(), wecom.WithAgentID(1000002),
		wecom.WithRule(unwrapped, catalog.Rule{Name: "two-at-a-time", Scope: catalog.ScopeApp, InFlight: 2}))
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

// resourceServer answers every call with success after latency and
// records, per resource (the body's "id"), the most calls it had in flight
// at once.
func resourceServer(t *testing.T, latency time.Duration) (url string, peaks func() map[string]int) {
	t.Helper()
	var mu sync.Mutex
	now, peak := map[string]int{}, map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ ID string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		now[body.ID]++
		peak[body.ID] = max(peak[body.ID], now[body.ID])
		mu.Unlock()
		time.Sleep(latency)
		mu.Lock()
		now[body.ID]--
		mu.Unlock()
		_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(peak)
	}
}

// idKeys reads a test request's resource, its "id".
func idKeys(_ url.Values, body []byte) (catalog.Keys, error) {
	var r struct{ ID string }
	if err := json.Unmarshal(body, &r); err != nil || r.ID == "" {
		return catalog.Keys{}, fmt.Errorf("%w: no id", catalog.ErrNoKeys)
	}
	return catalog.Keys{Resource: r.ID}, nil
}

// Do enforces a per-resource rule on a path the SDK does not wrap once
// WithKeys says how to read the resource: one call at a time per resource,
// resources side by side; a request without it is refused unsent.
func TestDoEnforcesKeyedRules(t *testing.T) {
	t.Parallel()
	srv, peaks := resourceServer(t, 10*time.Millisecond)
	c := setup(t, wecom.WithBaseURL(srv), doToken(), wecom.WithAgentID(1000002), wecom.WithKeys(unwrapped, idKeys),
		wecom.WithRule(unwrapped, catalog.Rule{Name: "one-at-a-time", Scope: catalog.ScopeResource, InFlight: 1}))
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			if err := c.Do(context.Background(), http.MethodPost, unwrapped, nil, map[string]any{"id": fmt.Sprint("r", i%3)}, nil); err != nil {
				t.Errorf("Do: %v", err)
			}
		})
	}
	wg.Wait()
	if got := peaks(); len(got) != 3 || got["r0"] != 1 || got["r1"] != 1 || got["r2"] != 1 {
		t.Errorf("the most calls in flight per resource: %v, want 1 for each of r0, r1, r2", got)
	}
	err := c.Do(context.Background(), http.MethodPost, unwrapped, nil, map[string]any{"x": 1}, nil)
	if !errors.Is(err, wecom.ErrInvalidRequest) || !errors.Is(err, catalog.ErrNoKeys) {
		t.Errorf("Do without the resource = %v, want ErrInvalidRequest matching catalog.ErrNoKeys", err)
	}
}

// Do on mark_tag takes the lock of the customer its body names, with the
// catalog's Keys, as the typed method does: many Do calls on three
// customers at once, against the mock that refuses two edits of one
// customer at a time with 45033, all succeed and none is refused.
func TestDoLocksTheCustomerItEdits(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{Latency: 5 * time.Millisecond})
	srv.AddCustomers(testCorp, "u1", "wm0", "wm1", "wm2")
	c := setup(t, wecom.WithBaseURL(started(t, srv)))
	ctx := context.Background()
	g, err := c.CustomerTags.Add(ctx, wecom.CorpTagAddRequest{GroupName: "g", Tags: []wecom.CorpTagSpec{{Name: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			body := map[string]any{"userid": "u1", "external_userid": fmt.Sprint("wm", i%3), "add_tag": []string{g.Tags[0].ID}}
			if err := c.Do(ctx, http.MethodPost, catalog.MarkTag.Path(), nil, body, nil); err != nil {
				t.Errorf("Do: %v", err)
			}
		})
	}
	wg.Wait()
	if st := srv.Stats(); st.Refusals[wecom.CodeConcurrencyLimited] != 0 || st.MarkCalls != 30 {
		t.Errorf("%d answers 45033 and %d marks, want none and 30", st.Refusals[wecom.CodeConcurrencyLimited], st.MarkCalls)
	}
}

// A user's module of its own (testdata/usermodule), built against this
// tree, calls an API the SDK does not wrap through Do: New refuses a
// per-member rule nothing reads, and a per-resource rule given with
// WithKeys holds against a server that counts calls in flight per
// resource.
func TestDoFromAModuleOfItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	t.Parallel()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/usermodule/main.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	mod := "module example.com/user\n\ngo 1.25\n\nrequire github.com/wecomkit/wecom v0.0.0\n\nreplace github.com/wecomkit/wecom => " + root + "\n"
	for name, data := range map[string][]byte{"main.go": src, "go.mod": []byte(mod)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := os.ReadFile("go.sum") // the SDK's dependencies, as its own module pins them
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, peaks := resourceServer(t, 10*time.Millisecond)
	cmd := exec.Command("go", "run", ".", srv)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	for _, want := range []string{"per-member rule without keys refused by New: true", "calls failed: 0", "a call without its resource refused: true"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the program said:\n%s\nwant a line %q", out, want)
		}
	}
	if got := peaks(); got["r0"] != 1 || got["r1"] != 1 {
		t.Errorf("the most calls in flight per resource: %v, want 1 each", got)
	}
}

// A body Do is given as bytes or a string goes as it is, keys read from it,
// on a path whose rules need keys as on one whose do not: never encoded
// again as a JSON string.
func TestDoBytesBodyNotEncodedAgain(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok"}`))
	}))
	t.Cleanup(srv.Close)
	c := setup(t, wecom.WithBaseURL(srv.URL), doToken(), wecom.WithAgentID(1000002), wecom.WithKeys(unwrapped, idKeys),
		wecom.WithRule(unwrapped, catalog.Rule{Name: "one-at-a-time", Scope: catalog.ScopeResource, InFlight: 1}))
	const body = `{"id":"r1","text":"hi"}`
	for _, b := range []any{[]byte(body), body, json.RawMessage(body)} {
		if err := c.Do(context.Background(), http.MethodPost, unwrapped, nil, b, nil); err != nil {
			t.Fatalf("Do(%T): %v", b, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, g := range got {
		if g != body {
			t.Errorf("body %d sent as %q, want %q", i, g, body)
		}
	}
}
