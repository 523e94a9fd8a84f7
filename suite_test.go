package wecom_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/redisstore"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

const (
	testSuiteID     = "wwsuite0001"
	testSuiteSecret = "suite-secret-0123456789"
)

// lockedBuffer is a log sink safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fleetOptions returns the options of n processes sharing a Redis limiter
// and token store, logging to logs, with opts.
func fleetOptions(t *testing.T, url string, n int, logs io.Writer, opts ...wecom.Option) [][]wecom.Option {
	t.Helper()
	rdb := redistest.Single(t)
	prefix := redistest.Prefix(t, rdb)
	var out [][]wecom.Option
	for range n {
		b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		store, err := redisstore.New(rdb, prefix+"token:")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]wecom.Option{wecom.WithBaseURL(url), wecom.WithLimiter(b), wecom.WithTokenStore(store),
			wecom.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}, opts...))
	}
	return out
}

// fleet returns n clients of one corp app sharing a Redis limiter and token
// store, as n processes would, with opts.
func fleet(t *testing.T, url string, n int, logs io.Writer, opts ...wecom.Option) []*wecom.Client {
	t.Helper()
	var cs []*wecom.Client
	for _, o := range fleetOptions(t, url, n, logs, opts...) {
		cs = append(cs, setup(t, o...))
	}
	return cs
}

// newSuite returns the test suite's Suite with opts, drained at cleanup.
func newSuite(t testing.TB, opts ...wecom.Option) *wecom.Suite {
	t.Helper()
	s, err := wecom.NewSuite(testSuiteID, testSuiteSecret, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Drain(ctx)
	})
	return s
}

// newProvider returns a Provider with opts, drained at cleanup.
func newProvider(t testing.TB, corpID, secret string, opts ...wecom.Option) *wecom.Provider {
	t.Helper()
	p, err := wecom.NewProvider(corpID, secret, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = p.Drain(ctx)
	})
	return p
}

// The suite token: fetched once by a fleet of two processes for dozens of
// calls at once (the ticket fed to one of them), fetched once again after
// WeCom refused it (with the newest ticket, fed to the other), and never
// seen with the secret or a ticket in a log.
func TestSuiteTokenAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	base := started(t, srv)
	srv.AddSuite(testSuiteID, testSuiteSecret, "ticket-1")
	var logs lockedBuffer
	var ss []*wecom.Suite
	for _, o := range fleetOptions(t, base, 2, &logs) {
		ss = append(ss, newSuite(t, o...))
	}
	if err := ss[0].SetTicket(context.Background(), "ticket-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	burst := func() {
		t.Helper()
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				if code, _, err := ss[i%2].PreAuthCode(context.Background()); err != nil || code == "" {
					t.Errorf("PreAuthCode = %q, %v", code, err)
				}
			})
		}
		wg.Wait()
	}
	burst()
	if n := srv.Stats().Calls[catalog.GetSuiteToken.Path()]; n != 1 {
		t.Errorf("%d suite token fetches for 40 calls from two processes, want 1", n)
	}
	srv.SetSuiteTicket(testSuiteID, "ticket-2")
	if err := ss[1].SetTicket(context.Background(), "ticket-2", time.Now()); err != nil {
		t.Fatal(err)
	}
	srv.InvalidateSuiteTokens()
	burst()
	if n := srv.Stats().Calls[catalog.GetSuiteToken.Path()]; n != 2 {
		t.Errorf("%d suite token fetches after WeCom refused the token, want 2", n)
	}
	if n := srv.Stats().Refusals[wecom.CodeInvalidSuiteToken]; n == 0 {
		t.Error("no call met the refused token: the test proves nothing")
	}
	for _, secret := range []string{testSuiteSecret, "ticket-1", "ticket-2"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the logs hold %q", secret)
		}
	}
}

// echoSuite answers get_suite_token with an error whose errmsg echoes the
// request, secret and ticket included, as a hostile proxy might.
func echoSuite(t *testing.T) string {
	t.Helper()
	srv := tokenServer(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, `{"errcode":40085,"errmsg":"invalid suite ticket: `+strings.ReplaceAll(string(b), `"`, `'`)+`"}`)
	})
	t.Cleanup(srv.Close)
	return srv.URL
}

// failingStore is a token store whose reads fail with an error naming
// what it was given.
type failingStore struct {
	wecom.TokenStore
	secret string
}

func (f failingStore) Get(context.Context, string) (wecom.Token, error) {
	return wecom.Token{}, errors.New("vault refused suite " + f.secret)
}

// A suite token fetch refused with the request echoed in errmsg, or a
// token store that fails naming the suite's secret, reaches the caller and
// the log without the suite's secret or ticket.
func TestSuiteSecretsRedacted(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	for _, tc := range []struct {
		name  string
		store wecom.TokenStore
	}{
		{"echoed", wecom.NewMemoryTokenStore()},
		{"store failing", failingStore{TokenStore: wecom.NewMemoryTokenStore(), secret: testSuiteSecret}},
	} {
		s := newSuite(t, wecom.WithBaseURL(echoSuite(t)), wecom.WithTokenStore(tc.store),
			wecom.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		setErr := s.SetTicket(context.Background(), "ticket-echoed-42", time.Now())
		if (setErr != nil) != (tc.name == "store failing") {
			t.Fatalf("%s: SetTicket = %v", tc.name, setErr)
		}
		_, _, err := s.PreAuthCode(context.Background())
		err = errors.Join(err, setErr)
		if !errors.Is(err, wecom.ErrNoSuiteTicket) {
			t.Fatalf("%s: PreAuthCode = %v, want ErrNoSuiteTicket", tc.name, err)
		}
		for _, secret := range []string{testSuiteSecret, "ticket-echoed-42"} {
			if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
				t.Errorf("%s: %q in the error (%v) or the log", tc.name, secret, err)
			}
		}
	}
}

// A call whose endpoint carries another kind of token than the client
// holds (a suite's or a provider's, from a Client through Do) is refused
// with a *TokenKindError before anything is sent: never the corp's token
// in its place.
func TestTokenKindRefusedByDo(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, wecom.WithBaseURL(started(t, srv)))
	for _, id := range []catalog.ID{catalog.GetPreAuthCode, catalog.GetLoginInfo} {
		e, _ := catalog.Lookup(id.Path())
		var body any
		if e.Method == http.MethodPost {
			body = map[string]string{"auth_code": "x"}
		}
		err := c.Do(context.Background(), e.Method, id.Path(), nil, body, nil)
		var tk *wecom.TokenKindError
		if !errors.As(err, &tk) || tk.Needs != e.Token || tk.Holds != catalog.CorpToken || !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("Do %s = %v, want a *TokenKindError (needs %s, holds access_token)", id, err, e.Token)
		}
		if n := srv.Stats().Calls[id.Path()]; n != 0 {
			t.Errorf("%s: %d calls sent", id, n)
		}
	}
}

// The JS-SDK tickets: fetched once by a fleet of two processes, the same
// value for every caller; dropped exactly (another value changes nothing)
// and fetched again after InvalidateTicket.
func TestTicketsAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	base := started(t, srv)
	cs := fleet(t, base, 2, io.Discard)
	for _, k := range []struct {
		path string
		get  func(*wecom.Client) (string, error)
	}{
		{catalog.JSAPITicket.Path(), func(c *wecom.Client) (string, error) { return c.JSAPITicket(context.Background()) }},
		{catalog.AgentTicket.Path(), func(c *wecom.Client) (string, error) { return c.AgentTicket(context.Background()) }},
	} {
		var mu sync.Mutex
		seen := map[string]bool{}
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				v, err := k.get(cs[i%2])
				if err != nil {
					t.Errorf("%s: %v", k.path, err)
				}
				mu.Lock()
				seen[v] = true
				mu.Unlock()
			})
		}
		wg.Wait()
		if n := srv.Stats().Calls[k.path]; n != 1 || len(seen) != 1 {
			t.Errorf("%s: %d fetches and %d values for 20 callers in two processes, want 1 and 1", k.path, n, len(seen))
		}
		var cur string
		for v := range seen {
			cur = v
		}
		cs[0].InvalidateTicket(context.Background(), "not-"+cur)
		if _, _ = k.get(cs[0]); srv.Stats().Calls[k.path] != 1 {
			t.Errorf("%s: fetched again after another value was invalidated", k.path)
		}
		cs[0].InvalidateTicket(context.Background(), cur)
		if _, _ = k.get(cs[1]); srv.Stats().Calls[k.path] != 1 {
			t.Errorf("%s: the other process fetched, though it still holds the ticket locally", k.path)
		}
		if _, _ = k.get(cs[0]); srv.Stats().Calls[k.path] != 2 {
			t.Errorf("%s: %d fetches after the ticket was invalidated, want 2", k.path, srv.Stats().Calls[k.path])
		}
	}
}

// The provider token: fetched once by a fleet of two processes, fetched
// again after WeCom refused it, its secret never in the logs; a login code
// serves once, and its answer holds the admin's apps and departments.
func TestProviderTokenAcrossProcesses(t *testing.T) {
	t.Parallel()
	const provider, secret = "wwprovider01", "provider-secret-987654"
	srv := newMock(t, mock.Config{})
	base := started(t, srv)
	srv.AddProvider(provider, secret)
	for i := range 42 {
		srv.AddLoginCode(provider, fmt.Sprint("code-", i), "wwcustomer", fmt.Sprint("user", i))
	}
	var logs lockedBuffer
	var ps []*wecom.Provider
	for _, o := range fleetOptions(t, base, 2, &logs) {
		ps = append(ps, newProvider(t, provider, secret, o...))
	}
	login := func(from, n int) {
		t.Helper()
		var wg sync.WaitGroup
		for i := from; i < from+n; i++ {
			wg.Go(func() {
				info, err := ps[i%2].LoginInfo(context.Background(), fmt.Sprint("code-", i))
				if err != nil || info.User.UserID != fmt.Sprint("user", i) || info.Corp.CorpID != "wwcustomer" ||
					len(info.Agents) != 1 || len(info.AuthInfo.Departments) != 1 || !info.AuthInfo.Departments[0].Writable {
					t.Errorf("LoginInfo = %+v, %v", info, err)
				}
			})
		}
		wg.Wait()
	}
	login(0, 20)
	if n := srv.Stats().Calls[catalog.GetProviderToken.Path()]; n != 1 {
		t.Errorf("%d provider token fetches for 20 calls from two processes, want 1", n)
	}
	srv.InvalidateProviderTokens()
	login(20, 20)
	if n := srv.Stats().Calls[catalog.GetProviderToken.Path()]; n != 2 {
		t.Errorf("%d provider token fetches after WeCom refused the token, want 2", n)
	}
	if _, err := ps[0].LoginInfo(context.Background(), "code-0"); err == nil {
		t.Error("a login code served twice")
	}
	if strings.Contains(logs.String(), secret) {
		t.Error("the logs hold the provider secret")
	}
}
