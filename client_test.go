package wecom

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		corp, secret   string
		opts           []Option
		wantInvalidArg string
	}{
		{"empty corp", "", testSecret, nil, "corp id"},
		{"corp with brace", "a{b", testSecret, nil, "corp id"},
		{"empty secret", testCorp, "", nil, "secret"},
		{"bad base URL", testCorp, testSecret, []Option{WithBaseURL("ftp://x")}, "base URL"},
		{"nil http client", testCorp, testSecret, []Option{WithHTTPClient(nil)}, "HTTP client"},
		{"nil transport", testCorp, testSecret, []Option{WithTransport(nil)}, "transport"},
		{"zero agent", testCorp, testSecret, []Option{WithAgentID(0)}, "agent id"},
		{"nil limiter", testCorp, testSecret, []Option{WithLimiter(nil)}, "limiter"},
		{"nil store", testCorp, testSecret, []Option{WithTokenStore(nil)}, "token store"},
		{"nil source", testCorp, testSecret, []Option{WithTokenSource(nil)}, "token source"},
		{"negative limits", testCorp, testSecret, []Option{WithLimits(catalog.MarkTag.Path(), Limits{Concurrency: -2})}, "limits " + catalog.MarkTag.Path()},
		{"relative limits path", testCorp, testSecret, []Option{WithLimits("cgi-bin/x", Limits{})}, "limits path"},
		{"bad retry policy", testCorp, testSecret, []Option{WithRetryPolicy(RetryPolicy{MaxRetries: -2})}, "retry policy"},
		{"nil logger", testCorp, testSecret, []Option{WithLogger(nil)}, "logger"},
		{"nil observer", testCorp, testSecret, []Option{WithObserver(nil)}, "observer"},
		{"zero attempt timeout", testCorp, testSecret, []Option{WithAttemptTimeout(0)}, "attempt timeout"},
		{"nil option", testCorp, testSecret, []Option{nil}, "option"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.corp, tc.secret, tc.opts...)
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidRequest) || ve.Field != tc.wantInvalidArg {
				t.Fatalf("New = %v, want a *ValidationError on %q", err, tc.wantInvalidArg)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Fatalf("error %q holds the secret", err)
			}
		})
	}
	src := WithTokenSource(TokenSourceFunc(func(context.Context) (Token, error) { return Token{}, nil }))
	if _, err := New(testCorp, "", src, WithAgentID(1000002)); err != nil {
		t.Errorf("New without secret but with a token source: %v", err)
	}
	var ve *ValidationError
	if _, err := New(testCorp, "", src); !errors.As(err, &ve) || ve.Field != "agent id" {
		t.Errorf("New with a token source and neither secret nor agent id = %v, want an agent id error", err)
	}
}

// Clients are cheap: creating many starts no goroutine.
func TestNewStartsNoGoroutine(t *testing.T) {
	shared := throttle.NewMemory()
	before := runtime.NumGoroutine()
	for i := range 100 {
		if _, err := New(fmt.Sprintf("corp%d", i), testSecret, WithLimiter(shared)); err != nil {
			t.Fatal(err)
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines after creating 100 clients, %d before", after, before)
	}
}

func TestColdCallersShareOneFetch(t *testing.T) {
	f := setup(t)
	f.respond("GET", catalog.TagList.Path(), `{"errcode":0,"errmsg":"ok","taglist":[]}`)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			_, err := f.c.Tags.List(context.Background())
			if f.record(err) != nil {
				t.Errorf("List: %v", err)
			}
		})
	}
	wg.Wait()
	if n := f.tokenHits.Load(); n != 1 {
		t.Errorf("gettoken called %d times for 100 cold callers, want 1", n)
	}
	if n := f.calls("GET", catalog.TagList.Path()); n != 100 {
		t.Errorf("%d list calls, want 100", n)
	}
}

// tokenServer hands out TOKEN-1, TOKEN-2, ... one per gettoken call, and
// accepts only the latest one.
type tokenServer struct {
	mu      sync.Mutex
	issued  int
	fetches atomic.Int64
	apiHits atomic.Int64
	code    int // errcode for a stale token
	// barrier, when set, holds rejections until that many are in flight.
	barrier *sync.WaitGroup
}

func (s *tokenServer) register(mt *httpmock.MockTransport, path string) {
	mt.RegisterResponder("GET", testBaseURL+catalog.GetToken.Path(), func(*http.Request) (*http.Response, error) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.issued++
		return httpmock.NewStringResponse(200, fmt.Sprintf(`{"errcode":0,"errmsg":"ok","access_token":"TOKEN-%d","expires_in":7200}`, s.issued)), nil
	})
	mt.RegisterResponder("GET", testBaseURL+path, func(r *http.Request) (*http.Response, error) {
		s.apiHits.Add(1)
		s.mu.Lock()
		stale := r.URL.Query().Get("access_token") != fmt.Sprintf("TOKEN-%d", s.issued)
		b := s.barrier
		s.mu.Unlock()
		if stale {
			if b != nil {
				b.Done()
				b.Wait()
			}
			return httpmock.NewStringResponse(200, fmt.Sprintf(`{"errcode":%d,"errmsg":"invalid access_token"}`, s.code)), nil
		}
		return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","taglist":[]}`), nil
	})
}

// 40014 and 42001: the token that failed is dropped once, one new token is
// fetched, every caller retries once with it, and the newer token is never
// thrown away by late reports about the old one.
func TestRejectedTokenRefetchedOnce(t *testing.T) {
	for _, code := range []int{CodeInvalidAccessToken, CodeAccessTokenExpired} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			// No concurrency limit, so that all 50 callers are in flight at once.
			f := setup(t, WithLimits(catalog.TagList.Path(), Limits{Concurrency: NoLimit}))
			ts := &tokenServer{code: code}
			ts.register(f.mt, catalog.TagList.Path())
			ctx := context.Background()
			if _, err := f.c.Tags.List(ctx); err != nil {
				t.Fatal(err)
			}
			// WeCom invalidates TOKEN-1 early: the next gettoken gives TOKEN-2.
			ts.mu.Lock()
			ts.issued++
			ts.barrier = new(sync.WaitGroup)
			ts.barrier.Add(50) // every caller is rejected before any refetch
			ts.mu.Unlock()
			ts.fetches.Store(0)
			ts.apiHits.Store(0)
			var wg sync.WaitGroup
			for range 50 {
				wg.Go(func() {
					if _, err := f.c.Tags.List(ctx); f.record(err) != nil {
						t.Errorf("List: %v", err)
					}
				})
			}
			wg.Wait()
			if n := ts.fetches.Load(); n != 1 {
				t.Errorf("%d refetches for 50 callers with a rejected token, want 1", n)
			}
			if n := ts.apiHits.Load(); n != 100 {
				t.Errorf("%d API calls, want 100 (one rejected and one retry each)", n)
			}
			// A late report about the old token keeps the new one.
			f.c.p.corp().invalidate(ctx, "TOKEN-2")
			before := ts.fetches.Load()
			if _, err := f.c.Tags.List(ctx); err != nil {
				t.Fatal(err)
			}
			if ts.fetches.Load() != before {
				t.Errorf("a report about the old token discarded the newer one")
			}
		})
	}
}

// A token refused twice in a row (a second rejection after the refetch) is an
// error, not a loop.
func TestTokenRejectedTwiceFails(t *testing.T) {
	f := setup(t)
	f.respond("GET", catalog.TagList.Path(), `{"errcode":40014,"errmsg":"invalid access_token"}`)
	_, err := f.c.Tags.List(context.Background())
	f.record(err)
	if !errors.Is(err, ErrTokenInvalid) {
		t.Fatalf("err = %v, want ErrTokenInvalid", err)
	}
	if n := f.calls("GET", catalog.TagList.Path()); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
	if n := f.tokenHits.Load(); n != 2 {
		t.Errorf("%d gettoken calls, want 2", n)
	}
}

// sequence answers the given bodies in turn, then the last one forever.
func sequence(bodies ...string) httpmock.Responder {
	var n atomic.Int64
	return func(*http.Request) (*http.Response, error) {
		i := min(int(n.Add(1))-1, len(bodies)-1)
		return httpmock.NewStringResponse(200, bodies[i]), nil
	}
}

func TestConcurrencyLimitedRetried(t *testing.T) {
	f := setup(t)
	f.mt.RegisterResponder("POST", testBaseURL+catalog.MarkTag.Path(), sequence(
		`{"errcode":45033,"errmsg":"api concurrent out of limit"}`,
		`{"errcode":45033,"errmsg":"api concurrent out of limit"}`,
		`{"errcode":0,"errmsg":"ok"}`))
	var attempts []Attempt
	var mu sync.Mutex
	f.c.p.cfg.observer = func(_ context.Context, a Attempt) {
		mu.Lock()
		attempts = append(attempts, a)
		mu.Unlock()
	}
	err := f.c.CustomerTags.Mark(context.Background(), MarkTagRequest{UserID: "u", ExternalUserID: "wm1", AddTags: []string{"et1"}})
	if err != nil {
		t.Fatalf("Mark: %v", err)
	}
	var marks []Attempt
	for _, a := range attempts {
		if a.Path == catalog.MarkTag.Path() {
			marks = append(marks, a)
		}
	}
	if len(marks) != 3 || marks[0].ErrCode != 45033 || marks[1].Number != 2 || marks[2].ErrCode != 0 || marks[2].Err != nil {
		t.Errorf("attempts = %+v, want 45033, 45033, ok numbered 1..3", marks)
	}
}

// 45009 puts the API into cooldown: the next call fails without a request.
func TestRateLimitedCoolsDown(t *testing.T) {
	f := setup(t, WithLimits(catalog.TagList.Path(), Limits{PerMinute: 100, BlockFor: 10 * time.Minute}))
	f.respond("GET", catalog.TagList.Path(), `{"errcode":45009,"errmsg":"api freq out of limit"}`)
	_, err := f.c.Tags.List(context.Background())
	f.record(err)
	var rl *RateLimitError
	if !errors.As(err, &rl) || !errors.Is(err, ErrRateLimited) || rl.RetryAfter != 10*time.Minute {
		t.Fatalf("err = %v, want a *RateLimitError with RetryAfter 10m", err)
	}
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != CodeFrequencyLimited {
		t.Errorf("err does not unwrap to the 45009 answer: %v", err)
	}
	_, err = f.c.Tags.List(context.Background())
	f.record(err)
	if !errors.As(err, &rl) || rl.RetryAfter <= 0 || rl.RetryAfter > 10*time.Minute {
		t.Fatalf("second call: err = %v, want a local *RateLimitError", err)
	}
	if n := f.calls("GET", catalog.TagList.Path()); n != 1 {
		t.Errorf("%d requests sent, want 1: the cooldown must keep calls off the network", n)
	}
	// Other APIs of the corp are not blocked.
	f.respond("POST", catalog.TagUpdate.Path(), `{"errcode":0,"errmsg":"updated"}`)
	if err := f.c.Tags.Update(context.Background(), TagUpdateRequest{ID: 1, Name: "x"}); err != nil {
		t.Errorf("another API during the cooldown: %v", err)
	}
}

// With WithWaitOnRateLimit, a call waits the block out (virtual time).
func TestRateLimitedWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, WithWaitOnRateLimit(true))
		f.mt.RegisterResponder("GET", testBaseURL+catalog.TagList.Path(), sequence(
			`{"errcode":45009,"errmsg":"api freq out of limit"}`,
			`{"errcode":0,"errmsg":"ok","taglist":[{"tagid":1,"tagname":"a"}]}`))
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		tags, err := f.c.Tags.List(ctx)
		if err != nil || len(tags) != 1 {
			t.Fatalf("List = %v, %v", tags, err)
		}
		if waited := time.Since(start); waited < time.Minute {
			t.Errorf("retried after %s, before the 60 s block ended", waited)
		}
		// A deadline before the end of a new block fails at once.
		f.mt.RegisterResponder("GET", testBaseURL+catalog.TagList.Path(), httpmock.NewStringResponder(200, `{"errcode":45009,"errmsg":"x"}`))
		short, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel2()
		start = time.Now()
		_, err = f.c.Tags.List(short)
		f.record(err)
		if !errors.Is(err, ErrRateLimited) || time.Since(start) != 0 {
			t.Errorf("err = %v after %s, want ErrRateLimited at once", err, time.Since(start))
		}
	})
}

// -1 is retried only for calls that are safe to repeat.
func TestSystemBusyRetriedOnlyWhenSafe(t *testing.T) {
	cases := []struct {
		name, method string
		wantAttempts int
	}{
		{"GET retried", "GET", 4},
		{"POST not retried", "POST", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			f.respond(tc.method, "/cgi-bin/user/x", `{"errcode":-1,"errmsg":"system busy"}`)
			var body any
			if tc.method == "POST" {
				body = map[string]string{"a": "b"}
			}
			err := f.record(f.c.Do(context.Background(), tc.method, "/cgi-bin/user/x", nil, body, nil))
			if !errors.Is(err, ErrSystemBusy) {
				t.Fatalf("err = %v, want ErrSystemBusy", err)
			}
			if n := f.calls(tc.method, "/cgi-bin/user/x"); n != tc.wantAttempts {
				t.Errorf("%d attempts, want %d", n, tc.wantAttempts)
			}
		})
	}
	// And a busy answer followed by success succeeds.
	f := setup(t)
	f.mt.RegisterResponder("GET", testBaseURL+catalog.TagList.Path(), sequence(`{"errcode":-1,"errmsg":"busy"}`, `{"errcode":6000,"errmsg":"conflict"}`, `{"errcode":0,"errmsg":"ok","taglist":[]}`))
	if _, err := f.c.Tags.List(context.Background()); err != nil {
		t.Errorf("List after busy answers: %v", err)
	}
}

// Bad credentials fail at once and gettoken is not asked again for a while.
func TestBadSecretNotLooped(t *testing.T) {
	for _, code := range []int{CodeInvalidSecret, CodeInvalidCorpID, CodeSecretOfOtherCorp} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			f := setup(t)
			f.mt.RegisterResponder("GET", testBaseURL+catalog.GetToken.Path(), func(*http.Request) (*http.Response, error) {
				f.tokenHits.Add(1)
				return httpmock.NewStringResponse(200, fmt.Sprintf(`{"errcode":%d,"errmsg":"bad"}`, code)), nil
			})
			for range 20 {
				_, err := f.c.Tags.List(context.Background())
				f.record(err)
				var ae *APIError
				if !errors.Is(err, ErrBadCredentials) || !errors.As(err, &ae) || ae.Code != code {
					t.Fatalf("err = %v, want ErrBadCredentials with code %d", err, code)
				}
			}
			if n := f.tokenHits.Load(); n != 1 {
				t.Errorf("gettoken called %d times, want 1", n)
			}
			if n := f.calls("GET", catalog.TagList.Path()); n != 0 {
				t.Errorf("%d API calls without a token", n)
			}
		})
	}
}

// The backoff after bad credentials ends: a fixed secret works again.
func TestBadSecretBackoffEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, WithBadCredentialsBackoff(time.Minute))
		f.mt.RegisterResponder("GET", testBaseURL+catalog.GetToken.Path(), sequence(`{"errcode":40001,"errmsg":"invalid secret"}`, `{"errcode":0,"errmsg":"ok","access_token":"TOKEN-x","expires_in":7200}`))
		f.respond("GET", catalog.TagList.Path(), `{"errcode":0,"errmsg":"ok","taglist":[]}`)
		_, err := f.c.Tags.List(context.Background())
		f.record(err)
		if !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("err = %v", err)
		}
		time.Sleep(61 * time.Second)
		if _, err := f.c.Tags.List(context.Background()); err != nil {
			t.Errorf("after the backoff: %v", err)
		}
	})
}

// Cancelled waiters leave no lease behind, and a panicking observer does not
// leak the lease of its call.
func TestNoLeaseLeftBehind(t *testing.T) {
	shared := throttle.NewMemory()
	f := setup(t, WithLimiter(shared), WithLimits(catalog.TagList.Path(), Limits{Concurrency: 2}))
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	f.mt.RegisterResponder("GET", testBaseURL+catalog.TagList.Path(), func(*http.Request) (*http.Response, error) {
		entered <- struct{}{}
		<-release
		return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","taglist":[]}`), nil
	})
	if _, err := f.c.p.corp().token(context.Background()); err != nil {
		t.Fatal(err)
	}
	var holders sync.WaitGroup
	for range 2 {
		holders.Go(func() {
			if _, err := f.c.Tags.List(context.Background()); err != nil {
				t.Errorf("holder: %v", err)
			}
		})
	}
	<-entered
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	var waiters sync.WaitGroup
	for range 300 {
		waiters.Go(func() {
			_, err := f.c.Tags.List(ctx)
			f.record(err)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("waiter: %v, want context.Canceled", err)
			}
		})
	}
	cancel()
	waiters.Wait()
	close(release)
	holders.Wait()
	key := f.c.p.apiKey(catalog.TagList.Path())
	free := func() int {
		var ls []throttle.Lease
		for {
			l, err := shared.TryAcquire(context.Background(), throttle.Request{Key: key, Concurrency: 2})
			if err != nil {
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			_ = shared.Release(context.Background(), l)
		}
		return len(ls)
	}
	if n := free(); n != 2 {
		t.Fatalf("%d of 2 slots free after the cancellations", n)
	}
	f.c.p.cfg.observer = func(context.Context, Attempt) { panic("observer bug") }
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the observer's panic did not reach the caller")
			}
		}()
		_, _ = f.c.Tags.List(context.Background())
	}()
	if n := free(); n != 2 {
		t.Errorf("%d of 2 slots free after a panic in the observer", n)
	}
}

// Calls through the client never exceed the concurrency limits: 5 per API,
// one per customer for mark_tag.
func TestClientKeepsConcurrencyLimits(t *testing.T) {
	f := setup(t)
	api, customers := newGauge(), newGauge()
	f.mt.RegisterResponder("POST", testBaseURL+catalog.MarkTag.Path(), func(r *http.Request) (*http.Response, error) {
		var req MarkTagRequest
		if err := decodeJSON(r, &req); err != nil {
			return nil, err
		}
		defer api.enter("")()
		defer customers.enter(req.ExternalUserID)()
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok"}`), nil
	})
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			err := f.c.CustomerTags.Mark(context.Background(), MarkTagRequest{UserID: "u", ExternalUserID: fmt.Sprint("wm", i%20), AddTags: []string{"et"}})
			if f.record(err) != nil {
				t.Errorf("Mark: %v", err)
			}
		})
	}
	wg.Wait()
	peak, customerPeak := api.peak(""), customers.maxPeak()
	if peak > 5 || customerPeak > 1 {
		t.Errorf("peak in flight %d (limit 5), per customer %d (limit 1)", peak, customerPeak)
	}
	if peak < 5 {
		t.Errorf("peak in flight %d: the 5 slots were not used", peak)
	}
}

// Transport errors name the URL without the token.
func TestTransportErrorRedacted(t *testing.T) {
	f := setup(t)
	f.mt.RegisterResponder("GET", testBaseURL+catalog.TagList.Path(), httpmock.NewErrorResponder(errors.New("connection reset")))
	_, err := f.c.Tags.List(context.Background())
	f.record(err)
	if err == nil || !strings.Contains(err.Error(), "access_token=REDACTED") || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("err = %v, want the redacted URL and the cause", err)
	}
	var ue *url.Error
	if errors.As(err, &ue) && strings.Contains(ue.URL, "TOKEN-") {
		t.Errorf("the *url.Error in the chain holds the token: %s", ue.URL)
	}
	if n := f.calls("GET", catalog.TagList.Path()); n != 4 {
		t.Errorf("%d attempts for an idempotent call, want 4", n)
	}
}

func TestSanitizeErrorScrubsSecrets(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   error
	}{
		{"url error", &url.Error{Op: "Get", URL: testBaseURL + "/cgi-bin/gettoken?corpid=c&corpsecret=" + testSecret, Err: errors.New("EOF")}},
		{"token in text", fmt.Errorf("weird %s", testToken)},
		{"unparsable url", &url.Error{Op: "Get", URL: "%zz" + testToken, Err: context.DeadlineExceeded}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := newRedactor(testToken, testSecret).err(tc.in)
			if s := err.Error(); strings.Contains(s, testToken) || strings.Contains(s, testSecret) {
				t.Errorf("sanitized %q", s)
			}
		})
	}
	if err := newRedactor().err(&url.Error{Op: "Get", URL: "%zz", Err: context.DeadlineExceeded}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("sanitizing lost the cause: %v", err)
	}
}

// A token is refreshed ahead of expiry by one caller while the others go on.
func TestTokenRefreshedAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, WithTokenRefreshAhead(5*time.Minute))
		ts := &tokenServer{code: CodeAccessTokenExpired}
		ts.register(f.mt, catalog.TagList.Path())
		// The server takes any recent token: count fetches only.
		f.mt.RegisterResponder("GET", testBaseURL+catalog.TagList.Path(), httpmock.NewStringResponder(200, `{"errcode":0,"errmsg":"ok","taglist":[]}`))
		ctx := context.Background()
		if _, err := f.c.Tags.List(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(7200*time.Second - 6*time.Minute)
		if _, err := f.c.Tags.List(ctx); err != nil {
			t.Fatal(err)
		}
		if n := ts.fetches.Load(); n != 1 {
			t.Fatalf("%d fetches before the refresh window, want 1", n)
		}
		time.Sleep(2 * time.Minute) // inside the window (5 min less up to 20%)
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if _, err := f.c.Tags.List(ctx); err != nil {
					t.Errorf("List: %v", err)
				}
			})
		}
		wg.Wait()
		synctest.Wait() // the refresh runs in the background
		if n := ts.fetches.Load(); n != 2 {
			t.Errorf("%d fetches after the refresh window opened, want 2", n)
		}
		if got, _ := f.c.p.corp().token(ctx); got != "TOKEN-2" {
			t.Errorf("token after refresh = %s", got)
		}
	})
}

func TestDoValidates(t *testing.T) {
	f := setup(t)
	cases := []struct {
		name, method, path string
		query              url.Values
		body               any
	}{
		{"bad method", "PUT", "/cgi-bin/x", nil, nil},
		{"relative path", "GET", "cgi-bin/x", nil, nil},
		{"query in path", "GET", "/cgi-bin/x?a=b", nil, nil},
		{"token in query", "GET", "/cgi-bin/x", url.Values{"access_token": {"x"}}, nil},
		{"GET with body", "GET", "/cgi-bin/x", nil, map[string]int{"a": 1}},
		{"a wrapped endpoint with the other method", "GET", catalog.CustomerBatch.Path(), nil, nil},
		{"mark_tag without its customer", "POST", catalog.MarkTag.Path(), nil, map[string]string{"userid": "u"}},
		{"remark without its customer", "POST", catalog.CustomerRemark.Path(), nil, map[string]string{"external_userid": "wm"}},
		{"mark_tag with a body that is no object", "POST", catalog.MarkTag.Path(), nil, []string{"u", "wm"}},
		{"mark_tag with a trailing slash", "POST", catalog.MarkTag.Path() + "/", nil, map[string]string{"userid": "u"}},
		{"mark_tag with a doubled slash", "POST", "/cgi-bin/externalcontact//mark_tag", nil, map[string]string{"userid": "u"}},
		{"mark_tag in another case", "POST", "/cgi-bin/ExternalContact/mark_tag", nil, map[string]string{"userid": "u"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := f.c.Do(context.Background(), tc.method, tc.path, tc.query, tc.body, nil)
			if !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("Do = %v, want ErrInvalidRequest", err)
			}
		})
	}
	if n := f.mt.GetTotalCallCount(); n != 0 {
		t.Errorf("%d requests sent for invalid calls", n)
	}
	f.respond("POST", "/cgi-bin/agent/list", `{"errcode":0,"errmsg":"ok","userlist":[{"userid":"a"}]}`)
	var out struct {
		Users []struct {
			UserID string `json:"userid"`
		} `json:"userlist"`
	}
	if err := f.c.Do(context.Background(), "POST", "/cgi-bin/agent/list", url.Values{"department_id": {"1"}}, map[string]int{"x": 1}, &out); err != nil || len(out.Users) != 1 {
		t.Errorf("Do = %v, %+v", err, out)
	}
}

// TestDoKeepsTheCatalog: Do on a wrapped endpoint retries it after -1 as
// its typed method does when the catalog says it is safe to repeat (a
// POST), and not when it is not.
func TestDoKeepsTheCatalog(t *testing.T) {
	f := setup(t)
	busy := `{"errcode":-1,"errmsg":"system busy"}`
	f.respond("POST", catalog.CustomerBatch.Path(), busy)
	f.respond("POST", catalog.TagCreate.Path(), busy)
	ctx := context.Background()
	for _, tc := range []struct {
		path  string
		calls int
	}{{catalog.CustomerBatch.Path(), 4}, {catalog.TagCreate.Path(), 1}} {
		if err := f.record(f.c.Do(ctx, "POST", tc.path, nil, map[string]any{"x": 1}, nil)); !errors.Is(err, ErrSystemBusy) {
			t.Errorf("Do(%s) = %v", tc.path, err)
		}
		if n := f.calls("POST", tc.path); n != tc.calls {
			t.Errorf("Do(%s): %d calls, want %d", tc.path, n, tc.calls)
		}
	}
}

// Two clients of one app sharing a token store make one gettoken call; a
// client of another app of the same corp gets its own token.
func TestSharedTokenStore(t *testing.T) {
	store := NewMemoryTokenStore()
	a := setup(t, WithTokenStore(store))
	b := setup(t, WithTokenStore(store))
	for _, f := range []*fixture{a, b} {
		f.respond("GET", catalog.TagList.Path(), `{"errcode":0,"errmsg":"ok","taglist":[]}`)
		if _, err := f.c.Tags.List(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.tokenHits.Load() + b.tokenHits.Load(); n != 1 {
		t.Errorf("%d gettoken calls for two clients sharing a store, want 1", n)
	}
	other, err := New(testCorp, "another-secret", WithTokenStore(store), WithBaseURL(testBaseURL), WithTransport(a.mt))
	if err != nil {
		t.Fatal(err)
	}
	if other.p.corp().key == a.c.p.corp().key {
		t.Fatalf("two apps share the token key %q", other.p.corp().key)
	}
	if strings.Contains(other.p.corp().key, "another-secret") || strings.Contains(a.c.p.corp().key, testSecret) {
		t.Errorf("a token key holds the secret: %q", a.c.p.corp().key)
	}
}

// A token source replaces gettoken; a rejected token is asked for again.
func TestTokenSource(t *testing.T) {
	var asked atomic.Int64
	src := TokenSourceFunc(func(context.Context) (Token, error) {
		n := asked.Add(1)
		return Token{Value: fmt.Sprintf("TOKEN-src-%d", n), ExpiresAt: time.Now().Add(time.Hour)}, nil
	})
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder("GET", testBaseURL+catalog.TagList.Path(), func(r *http.Request) (*http.Response, error) {
		if r.URL.Query().Get("access_token") != "TOKEN-src-2" {
			return httpmock.NewStringResponse(200, `{"errcode":42001,"errmsg":"expired"}`), nil
		}
		return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","taglist":[]}`), nil
	})
	c, err := New(testCorp, "", WithTokenSource(src), WithAgentID(1000002), WithBaseURL(testBaseURL), WithTransport(mt))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tags.List(context.Background()); err != nil {
		t.Fatalf("List: %v", err)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("token source asked %d times, want 2", n)
	}
	if n := mt.GetCallCountInfo()["GET "+testBaseURL+catalog.GetToken.Path()]; n != 0 {
		t.Errorf("gettoken called %d times with a token source", n)
	}
	bad := TokenSourceFunc(func(context.Context) (Token, error) { return Token{}, errors.New("service down") })
	c2, _ := New(testCorp, "", WithTokenSource(bad), WithAgentID(1000002), WithBaseURL(testBaseURL), WithTransport(mt))
	if _, err := c2.Tags.List(context.Background()); err == nil || !strings.Contains(err.Error(), "service down") {
		t.Errorf("List with a failing source = %v", err)
	}
}

// A failed refresh ahead fails no call while the old token is good, and is
// retried calmly, not by every call.
func TestFailedRefreshKeepsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t)
		f.respond("GET", catalog.TagList.Path(), `{"errcode":0,"errmsg":"ok","taglist":[]}`)
		ctx := context.Background()
		if _, err := f.c.Tags.List(ctx); err != nil {
			t.Fatal(err)
		}
		f.mt.RegisterResponder("GET", testBaseURL+catalog.GetToken.Path(), func(*http.Request) (*http.Response, error) {
			f.tokenHits.Add(1)
			return httpmock.NewStringResponse(503, "busy"), nil
		})
		time.Sleep(7200*time.Second - 3*time.Minute) // inside the refresh window, token still good
		before := f.tokenHits.Load()
		for range 60 {
			if _, err := f.c.Tags.List(ctx); f.record(err) != nil {
				t.Fatalf("List with a good token while the refresh fails: %v", err)
			}
			synctest.Wait()
			time.Sleep(time.Second)
		}
		// One refresh (4 attempts) at the start and one 30 s later.
		if n := f.tokenHits.Load() - before; n > 8 {
			t.Errorf("%d gettoken attempts in a minute of failed refreshes, want at most 8", n)
		}
	})
}

// WeCom hands out the same token until it expires: a client calling every
// ten seconds for three hours makes a handful of gettoken calls, no storm at the
// end of each token's life, and no failed call.
func TestSameTokenUntilExpiry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := setup(t)
		m, c := f.srv, f.c
		ctx := context.Background()
		for range 3 * 360 { // a call every 10 s for 3 hours
			if _, err := c.Tags.List(ctx); err != nil {
				t.Fatalf("List: %v", err)
			}
			synctest.Wait()
			time.Sleep(10 * time.Second)
		}
		// Two tokens: a fetch each and one refresh ahead that gets the same
		// token back (a 3rd refresh would fall after the run).
		if n := m.Stats().GetTokenCalls; n > 4 {
			t.Errorf("%d gettoken calls in 3 hours, want at most 4", n)
		}
		if n := m.Stats().Refusals[CodeAccessTokenExpired] + m.Stats().Refusals[CodeInvalidAccessToken]; n > 2 {
			t.Errorf("%d calls refused for an expired token", n)
		}
	})
}

// A panic in the observer during a token fetch reaches the caller, like any
// panic in the observer, instead of killing the process.
func TestObserverPanicDuringTokenFetch(t *testing.T) {
	f := setup(t)
	f.c.p.cfg.observer = func(_ context.Context, a Attempt) {
		if a.Path == catalog.GetToken.Path() {
			panic("observer bug")
		}
	}
	defer func() {
		if p := recover(); p != "observer bug" {
			t.Errorf("recovered %v, want the observer's panic", p)
		}
	}()
	_, _ = f.c.Tags.List(context.Background())
	t.Error("the call returned instead of panicking")
}

// The one-at-a-time lease per customer is never lost while its call waits
// for the API: two marks of one customer never overlap, even across a 60 s
// cooldown longer than the lease TTL.
func TestCustomerLeaseSurvivesLongWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, WithWaitOnRateLimit(true), WithAttemptTimeout(5*time.Second)) // lease TTL 20 s
		g := newGauge()
		var calls atomic.Int64
		f.mt.RegisterResponder("POST", testBaseURL+catalog.MarkTag.Path(), func(*http.Request) (*http.Response, error) {
			first := calls.Add(1) == 1
			leave := g.enter("wm1")
			time.Sleep(100 * time.Millisecond)
			leave()
			if first {
				return httpmock.NewStringResponse(200, `{"errcode":45009,"errmsg":"freq"}`), nil
			}
			return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok"}`), nil
		})
		req := MarkTagRequest{UserID: "u", ExternalUserID: "wm1", AddTags: []string{"et"}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := f.c.CustomerTags.Mark(ctx, req); err != nil {
				t.Errorf("first mark: %v", err)
			}
		})
		time.Sleep(30 * time.Second) // the first waits out the cooldown, its customer lease aging
		wg.Go(func() {
			if err := f.c.CustomerTags.Mark(ctx, req); err != nil {
				t.Errorf("second mark: %v", err)
			}
		})
		wg.Wait()
		if peak := g.peak("wm1"); peak > 1 {
			t.Errorf("%d marks of one customer in flight at once", peak)
		}
		if n := calls.Load(); n != 3 {
			t.Errorf("%d mark calls, want 3 (45009, then two marks)", n)
		}
	})
}

// A call slower than the lease TTL keeps its slot: no second call gets in.
func TestSlowCallKeepsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, WithLeaseTTL(time.Second), WithLimits(catalog.TagList.Path(), Limits{Concurrency: 1}))
		g := newGauge()
		f.mt.RegisterResponder("GET", testBaseURL+catalog.TagList.Path(), func(*http.Request) (*http.Response, error) {
			defer g.enter("")()
			time.Sleep(5 * time.Second)
			return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","taglist":[]}`), nil
		})
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 1500 * time.Millisecond)
				if _, err := f.c.Tags.List(context.Background()); err != nil {
					t.Errorf("List: %v", err)
				}
			})
		}
		wg.Wait()
		if peak := g.peak(""); peak != 1 {
			t.Errorf("%d calls in flight at once with a limit of 1 and calls 5 times the lease TTL", peak)
		}
	})
}

// keepingStore is a token store whose Delete fails: a refused token stays
// in it, as it does while another process's Delete has not run yet.
type keepingStore struct{ *MemoryTokenStore }

func (keepingStore) Delete(context.Context, string, string) error {
	return errors.New("store unreachable")
}

// A token WeCom refused is never taken back from the store by the fetch
// that replaces it, even when the store still holds it.
func TestRefusedTokenNotTakenBackFromTheStore(t *testing.T) {
	t.Parallel()
	f := setup(t, WithTokenStore(keepingStore{NewMemoryTokenStore()}))
	ts := &tokenServer{code: CodeInvalidAccessToken}
	ts.register(f.mt, catalog.TagList.Path())
	ctx := context.Background()
	if _, err := f.c.Tags.List(ctx); err != nil {
		t.Fatal(err)
	}
	ts.mu.Lock()
	ts.issued++ // WeCom invalidates TOKEN-1: the next gettoken gives a new one
	ts.mu.Unlock()
	if _, err := f.c.Tags.List(ctx); f.record(err) != nil {
		t.Fatalf("List after the token was refused, the store keeping it: %v", err)
	}
	if got, _ := f.c.p.corp().token(ctx); got == "TOKEN-1" {
		t.Errorf("token %s: the refused one, taken back from the store", got)
	}
}
