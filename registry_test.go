package wecom

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// corpFleet is a mock holding n corps, each with one app, reached through
// an httpmock transport, and the credentials of those apps.
type corpFleet struct {
	srv   *mock.Server
	mt    *httpmock.MockTransport
	creds CredentialMap
	apps  []App
}

// newCorpFleet returns n corps ("wwfleet0", ...) in a new mock configured
// by cfg.
func newCorpFleet(t testing.TB, n int, cfg mock.Config) *corpFleet {
	t.Helper()
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &corpFleet{srv: srv, mt: httpmock.NewMockTransport(), creds: make(CredentialMap)}
	srv.Register(f.mt, testBaseURL)
	for i := range n {
		app := App{CorpID: fmt.Sprintf("wwfleet%d", i)}
		srv.AddApp(app.CorpID, "secret-of-"+app.CorpID)
		f.creds[app] = Credentials{Secret: "secret-of-" + app.CorpID}
		f.apps = append(f.apps, app)
	}
	return f
}

// registry returns a registry of the fleet's apps, reaching its mock, with
// opts after that.
func (f *corpFleet) registry(t testing.TB, src CredentialSource, opts ...RegistryOption) *Registry {
	t.Helper()
	if src == nil {
		src = f.creds
	}
	base := WithClientOptions(WithBaseURL(testBaseURL), WithTransport(f.mt),
		WithRetryPolicy(RetryPolicy{MaxRetries: 1, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}))
	r, err := NewRegistry(src, append([]RegistryOption{base}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// client returns the registry's client of app.
func client(t testing.TB, r *Registry, app App) *Client {
	t.Helper()
	c, err := r.Client(context.Background(), app)
	if err != nil {
		t.Fatalf("client of %s: %v", app, err)
	}
	return c
}

// TestRegistryShares: the registry builds a corp's client on first use and
// hands the same one out after; every client shares the limiter, the token
// store, the HTTP client and the resolved limits, and calls its own corp.
func TestRegistryShares(t *testing.T) {
	t.Parallel()
	f := newCorpFleet(t, 3, mock.Config{})
	r := f.registry(t, nil)
	if r.Len() != 0 {
		t.Fatalf("a new registry holds %d clients", r.Len())
	}
	var cs []*Client
	for _, app := range f.apps {
		c := client(t, r, app)
		if again := client(t, r, app); again != c {
			t.Errorf("%s: a second ask built another client", app)
		}
		if c.CorpID() != app.CorpID {
			t.Errorf("the client of %s calls for %s", app, c.CorpID())
		}
		if _, err := c.Tags.List(context.Background()); err != nil {
			t.Errorf("%s: %v", app, err)
		}
		cs = append(cs, c)
	}
	a, b := cs[0].p, cs[1].p
	for _, s := range []struct {
		what string
		x, y any
	}{
		{"limiter", a.cfg.limiter, b.cfg.limiter},
		{"token store", a.cfg.tokenStore, b.cfg.tokenStore},
		{"HTTP client", a.cfg.http, b.cfg.http},
	} {
		if s.x != s.y {
			t.Errorf("the clients of two corps have their own %s", s.what)
		}
	}
	if reflect.ValueOf(a.endpoints).Pointer() != reflect.ValueOf(b.endpoints).Pointer() {
		t.Error("the clients of two corps resolved their limits each")
	}
	if n := f.srv.Stats().Calls[catalog.GetToken.Path()]; n != 3 {
		t.Errorf("gettoken called %d times for 3 corps, want 3", n)
	}
}

// TestRegistryCorpOptions: a corp's own limits apply to its client alone;
// the other corps keep the registry's, and a bad corp option fails
// NewRegistry.
func TestRegistryCorpOptions(t *testing.T) {
	t.Parallel()
	f := newCorpFleet(t, 2, mock.Config{})
	path := catalog.TagList.Path()
	r := f.registry(t, nil, WithCorpOptions("wwfleet1", WithLimits(path, Limits{PerMinute: 7})))
	perMinute := func(c *Client) int {
		rule, _ := c.p.limitsFor(path).rule(catalog.RulePerMinute)
		return rule.Limit
	}
	if got := perMinute(client(t, r, f.apps[0])); got != 10000 {
		t.Errorf("the other corp's per-minute limit: %d, want 10000", got)
	}
	c1 := client(t, r, f.apps[1])
	if got := perMinute(c1); got != 7 {
		t.Errorf("the corp's own per-minute limit: %d, want 7", got)
	}
	if c1.p.cfg.limiter != client(t, r, f.apps[0]).p.cfg.limiter {
		t.Error("a corp with options of its own has its own limiter")
	}
	for _, opt := range []RegistryOption{
		WithCorpOptions("wwfleet1", WithLimits("/cgi-bin/tag/lisst", Limits{PerMinute: 7})),
		WithCorpOptions("", WithAgentID(1)),
		WithCorpOptions("ww1", nil),
		WithIdleTimeout(0),
		WithClientOptions(WithEgress("a b")),
	} {
		if _, err := NewRegistry(f.creds, opt); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("NewRegistry with a bad option: %v, want ErrInvalidRequest", err)
		}
	}
}

// TestRegistryFirstUseBuildsOnce: many callers asking for a corp at once
// get one client, built from one lookup in the source; a failed lookup is
// not kept.
func TestRegistryFirstUseBuildsOnce(t *testing.T) {
	t.Parallel()
	f := newCorpFleet(t, 1, mock.Config{})
	var lookups atomic.Int64
	release := make(chan struct{})
	fail := atomic.Bool{}
	fail.Store(true)
	src := CredentialSourceFunc(func(ctx context.Context, app App) (Credentials, error) {
		lookups.Add(1)
		<-release
		if fail.Load() {
			return Credentials{}, errors.New("the database is down")
		}
		return f.creds.Credentials(ctx, app)
	})
	r := f.registry(t, src)
	ask := func() []*Client {
		const callers = 40
		got := make([]*Client, callers)
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() { got[i], errs[i] = r.Client(context.Background(), f.apps[0]) })
		}
		for r.Len() == 0 {
			runtime.Gosched()
		}
		close(release)
		wg.Wait()
		release = make(chan struct{})
		for i, err := range errs {
			if (err != nil) != fail.Load() {
				t.Fatalf("caller %d: %v (the source failing: %v)", i, err, fail.Load())
			}
		}
		return got
	}
	ask()
	if n := lookups.Load(); n < 1 || r.Len() != 0 {
		t.Fatalf("a failed build: %d lookups, %d clients kept", n, r.Len())
	}
	fail.Store(false)
	lookups.Store(0)
	got := ask()
	for i, c := range got {
		if c != got[0] {
			t.Fatalf("caller %d got another client", i)
		}
	}
	if n := lookups.Load(); n != 1 {
		t.Errorf("40 callers at once: %d lookups in the source, want 1", n)
	}
}

// TestRegistryWaiterOutlivesBuilder: when the caller building a client gives
// up, a caller waiting for it builds it instead of failing.
func TestRegistryWaiterOutlivesBuilder(t *testing.T) {
	t.Parallel()
	f := newCorpFleet(t, 1, mock.Config{})
	started := make(chan struct{}, 2)
	src := CredentialSourceFunc(func(ctx context.Context, app App) (Credentials, error) {
		started <- struct{}{}
		if ctx.Value(builderKey{}) != nil {
			<-ctx.Done()
			return Credentials{}, ctx.Err()
		}
		return f.creds.Credentials(ctx, app)
	})
	r := f.registry(t, src)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), builderKey{}, true))
	done := make(chan error)
	go func() {
		_, err := r.Client(ctx, f.apps[0])
		done <- err
	}()
	<-started
	waiter := make(chan error)
	go func() {
		_, err := r.Client(context.Background(), f.apps[0])
		waiter <- err
	}()
	for r.Len() == 0 {
		runtime.Gosched()
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the builder that gave up: %v", err)
	}
	if err := <-waiter; err != nil {
		t.Errorf("the waiter: %v", err)
	}
}

type builderKey struct{}

// bubbleGoroutines counts the goroutines of the synctest bubble the caller
// is in (runtime.NumGoroutine, but blind to the goroutines of other tests
// and of the runtime, which come and go).
func bubbleGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), ", synctest bubble ")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestRegistryDropsIdle: a client nobody asked for in the idle timeout is
// dropped, one asked for again is kept; no goroutine runs for it meanwhile.
func TestRegistryDropsIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCorpFleet(t, 10, mock.Config{})
		r := f.registry(t, nil, WithIdleTimeout(time.Minute))
		before := bubbleGoroutines()
		for _, app := range f.apps {
			client(t, r, app)
		}
		if n := bubbleGoroutines(); n > before {
			t.Errorf("10 idle clients: %d goroutines, %d before", n, before)
		}
		time.Sleep(40 * time.Second)
		kept := client(t, r, f.apps[0])
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := r.Len(); n != 1 {
			t.Errorf("70s after the first asks, 30s after the last: %d clients, want 1", n)
		}
		if c := client(t, r, f.apps[0]); c != kept {
			t.Error("the client asked for again was dropped")
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if n := r.Len(); n != 0 {
			t.Errorf("2 minutes idle: %d clients, want 0", n)
		}
		if n := bubbleGoroutines(); n > before {
			t.Errorf("after the drops: %d goroutines, %d before", n, before)
		}
		if c := client(t, r, f.apps[1]); c == nil || r.Len() != 1 {
			t.Error("a corp dropped was not built again")
		}
	})
}

// TestRegistryDrop: Drop forgets the corp's client and deletes its token
// from the shared store, also from a registry that never built it (another
// process); the other corps keep theirs.
func TestRegistryDrop(t *testing.T) {
	t.Parallel()
	f := newCorpFleet(t, 2, mock.Config{})
	store := NewMemoryTokenStore()
	r := f.registry(t, nil, WithClientOptions(WithTokenStore(store)))
	ctx := context.Background()
	keys := make([]string, 2)
	for i, app := range f.apps {
		c := client(t, r, app)
		if _, err := c.Tags.List(ctx); err != nil {
			t.Fatal(err)
		}
		keys[i] = c.p.corp().key
		if _, err := store.Get(ctx, keys[i]); err != nil {
			t.Fatalf("%s: no token stored: %v", app, err)
		}
	}
	if err := r.Drop(ctx, f.apps[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, keys[0]); !errors.Is(err, ErrNoToken) {
		t.Errorf("the dropped corp's token: %v, want ErrNoToken", err)
	}
	if _, err := store.Get(ctx, keys[1]); err != nil {
		t.Errorf("the other corp's token: %v", err)
	}
	if r.Len() != 1 {
		t.Errorf("%d clients after a drop, want 1", r.Len())
	}
	other := f.registry(t, nil, WithClientOptions(WithTokenStore(store)))
	if err := other.Drop(ctx, f.apps[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(ctx, keys[1]); !errors.Is(err, ErrNoToken) {
		t.Errorf("the token of a corp dropped by another registry: %v, want ErrNoToken", err)
	}
	if err := r.Drop(ctx, App{CorpID: "wwunknown"}); err != nil {
		t.Errorf("dropping an app the source does not know: %v", err)
	}
	calls := f.srv.Stats().Calls[catalog.GetToken.Path()]
	if _, err := client(t, r, f.apps[0]).Tags.List(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.srv.Stats().Calls[catalog.GetToken.Path()]; n != calls+1 {
		t.Errorf("the corp asked for again fetched %d tokens, want 1", n-calls)
	}
}

// TestRegistryBadApps: an app the source does not know, or one that cannot
// be named, fails with the registry's error and keeps nothing.
func TestRegistryBadApps(t *testing.T) {
	t.Parallel()
	f := newCorpFleet(t, 1, mock.Config{})
	r := f.registry(t, nil)
	ctx := context.Background()
	if _, err := r.Client(ctx, App{CorpID: "wwnobody"}); !errors.Is(err, ErrUnknownApp) {
		t.Errorf("an unknown corp: %v, want ErrUnknownApp", err)
	}
	for _, app := range []App{{CorpID: ""}, {CorpID: "w w"}, {CorpID: "ww1", AgentID: -1}} {
		if _, err := r.Client(ctx, app); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%q: %v, want ErrInvalidRequest", app, err)
		}
	}
	src := CredentialMap{{CorpID: "wwsrc", AgentID: 5}: {Source: TokenSourceFunc(func(context.Context) (Token, error) {
		return Token{}, errors.New("unused")
	}), AgentID: 6}}
	if _, err := newRegistryOf(t, src).Client(ctx, App{CorpID: "wwsrc", AgentID: 5}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("the source gives another agent id: %v, want ErrInvalidRequest", err)
	}
	if r.Len() != 0 {
		t.Errorf("%d clients kept after failures", r.Len())
	}
}

// newRegistryOf returns NewRegistry(src) or fails the test.
func newRegistryOf(t testing.TB, src CredentialSource) *Registry {
	t.Helper()
	r, err := NewRegistry(src)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
