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
	"sync/atomic"
	"testing"

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

// fleet returns n clients of one corp app sharing a Redis limiter and token
// store, as n processes would, with opts.
func fleet(t *testing.T, url string, n int, logs io.Writer, opts ...wecom.Option) []*wecom.Client {
	t.Helper()
	rdb := redistest.Single(t)
	prefix := redistest.Prefix(t, rdb)
	var cs []*wecom.Client
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
		c := setup(t, append([]wecom.Option{wecom.WithBaseURL(url), wecom.WithLimiter(b), wecom.WithTokenStore(store),
			wecom.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}, opts...)...)
		cs = append(cs, c)
	}
	return cs
}

// The suite token: fetched once by a fleet of two processes for dozens of
// calls at once, fetched once again (with the newest suite ticket) after
// WeCom refused it, and never seen with the secret or a ticket in a log.
func TestSuiteTokenAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	base := started(t, srv)
	srv.AddSuite(testSuiteID, testSuiteSecret, "ticket-1")
	var ticket atomic.Value
	ticket.Store("ticket-1")
	var logs lockedBuffer
	cs := fleet(t, base, 2, &logs, wecom.WithSuite(testSuiteID, testSuiteSecret, func(context.Context) (string, error) { return ticket.Load().(string), nil }))
	burst := func() {
		t.Helper()
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				if code, _, err := cs[i%2].PreAuthCode(context.Background()); err != nil || code == "" {
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
	ticket.Store("ticket-2")
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

// A suite token fetch refused with the request echoed in errmsg, or a
// ticket source that fails naming its secret, reaches the caller and the
// log without the suite's secret or ticket.
func TestSuiteSecretsRedacted(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	for _, tc := range []struct {
		name   string
		ticket func(context.Context) (string, error)
	}{
		{"echoed", func(context.Context) (string, error) { return "ticket-echoed-42", nil }},
		{"source failing", func(context.Context) (string, error) {
			return "", errors.New("vault refused suite " + testSuiteSecret)
		}},
	} {
		c := setup(t, wecom.WithBaseURL(echoSuite(t)), wecom.WithSuite(testSuiteID, testSuiteSecret, tc.ticket),
			wecom.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		_, _, err := c.PreAuthCode(context.Background())
		if err == nil {
			t.Fatalf("%s: PreAuthCode succeeded", tc.name)
		}
		for _, secret := range []string{testSuiteSecret, "ticket-echoed-42"} {
			if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
				t.Errorf("%s: %q in the error (%v) or the log", tc.name, secret, err)
			}
		}
	}
}

// A call whose endpoint carries a suite token, on a client given none, is
// refused before anything is sent: never the corp's token in its place.
func TestSuiteTokenRequired(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, wecom.WithBaseURL(started(t, srv)))
	if _, _, err := c.PreAuthCode(context.Background()); !errors.Is(err, wecom.ErrInvalidRequest) || !strings.Contains(err.Error(), "WithSuite") {
		t.Errorf("PreAuthCode without WithSuite = %v, want ErrInvalidRequest naming WithSuite", err)
	}
	if n := srv.Stats().Calls[catalog.GetPreAuthCode.Path()]; n != 0 {
		t.Errorf("%d calls sent", n)
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
// serves once.
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
	cs := fleet(t, base, 2, &logs, wecom.WithProvider(provider, secret))
	login := func(from, n int) {
		t.Helper()
		var wg sync.WaitGroup
		for i := from; i < from+n; i++ {
			wg.Go(func() {
				info, err := cs[i%2].LoginInfo(context.Background(), fmt.Sprint("code-", i))
				if err != nil || info.User.UserID != fmt.Sprint("user", i) || info.Corp.CorpID != "wwcustomer" {
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
	if _, err := cs[0].LoginInfo(context.Background(), "code-0"); err == nil {
		t.Error("a login code served twice")
	}
	if strings.Contains(logs.String(), secret) {
		t.Error("the logs hold the provider secret")
	}
}
