package wecom_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// faultFixture is a set of clients of one app (one per limiter backend: one
// "process" each) on a real HTTP server running the project's mock, with
// counters of what their observers saw.
type faultFixture struct {
	m         *mock.Server
	c         *wecom.Client // clients[0]
	clients   []*wecom.Client
	limiters  []throttle.Backend
	url       string           // the mock's
	tokens    wecom.TokenStore // the clients'
	abandoned atomic.Int64
	detached  atomic.Int64
}

// backendKinds are the limiter set-ups the fault tests run on: one process
// in memory, and two processes sharing Redis.
var backendKinds = []string{"memory", "redis"}

// newBackends returns the limiters of the processes of one kind.
func newBackends(t *testing.T, kind string) []throttle.Backend {
	t.Helper()
	if kind == "memory" {
		return []throttle.Backend{throttle.NewMemory()}
	}
	rdb := redistest.Single(t)
	prefix := redistest.Prefix(t, rdb)
	var bs []throttle.Backend
	for range 2 {
		b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		bs = append(bs, b)
	}
	return bs
}

func newFaultFixture(t *testing.T, cfg mock.Config, limiters []throttle.Backend, opts ...wecom.Option) *faultFixture {
	t.Helper()
	m := newMock(t, cfg, "u1", "u2")
	srv := m.Start()
	if limiters == nil {
		limiters = []throttle.Backend{throttle.NewMemory()}
	}
	tokens := wecom.NewMemoryTokenStore()
	f := &faultFixture{m: m, limiters: limiters, url: srv.URL, tokens: tokens}
	for _, l := range limiters {
		base := []wecom.Option{
			wecom.WithBaseURL(srv.URL),
			wecom.WithLimiter(l),
			wecom.WithTokenStore(tokens),
			wecom.WithObserver(func(_ context.Context, a wecom.Attempt) {
				if a.Abandoned {
					f.abandoned.Add(1)
				}
				if a.Detached {
					f.detached.Add(1)
				}
			}),
		}
		c := setup(t, append(base, opts...)...)
		f.clients = append(f.clients, c)
	}
	f.c = f.clients[0]
	t.Cleanup(func() {
		f.drain(t)
		srv.Close()
	})
	return f
}

// drain waits for the attempts of every client whose callers gave up.
func (f *faultFixture) drain(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range f.clients {
		if err := c.Drain(ctx); err != nil {
			t.Errorf("Drain: %v", err)
		}
	}
}

// tag creates one customer tag to mark with.
func (f *faultFixture) tag(t *testing.T) string {
	t.Helper()
	// A client of its own, with the default attempt timeout: the fixture's
	// may be shorter than a loaded machine takes to answer at all.
	c := setup(t, wecom.WithBaseURL(f.url), wecom.WithTokenStore(f.tokens))
	g, err := c.CustomerTags.Add(context.Background(), wecom.CorpTagAddRequest{GroupName: "faults", Tags: []wecom.CorpTagSpec{{Name: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	return g.Tags[0].ID
}

// markLoop runs workers, spread over the clients, that mark customers
// (customer i%customers) until stop is closed, each call with its own
// context from newCtx.
func (f *faultFixture) markLoop(workers, customers int, tag string, stop <-chan struct{}, newCtx func() (context.Context, context.CancelFunc)) (calls int64) {
	var n atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		c := f.clients[w%len(f.clients)]
		wg.Go(func() {
			for i := w; ; i += workers {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := newCtx()
				_ = c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: "u1", ExternalUserID: fmt.Sprintf("wm%04d", i%customers), AddTags: []string{tag}})
				cancel()
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return n.Load()
}

// A caller whose deadline is shorter than WeCom's answer returns at once, but
// the call goes on at WeCom: its slots go back only when the answer arrives,
// so the next calls never collide with it (no 45033).
func TestCallerGivingUpKeepsSlotsUntilAnswer(t *testing.T) {
	t.Parallel()
	for _, kind := range backendKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := newFaultFixture(t, mock.Config{Latency: 150 * time.Millisecond}, newBackends(t, kind))
			tag := f.tag(t)
			f.m.ResetStats()
			// A second of marks, longer until one attempt has gone on
			// without its caller (a loaded machine may make every caller
			// give up before its call leaves), at most ten.
			stop := make(chan struct{})
			go func() {
				defer close(stop)
				time.Sleep(time.Second)
				for give := time.Now().Add(9 * time.Second); f.detached.Load() == 0 && time.Now().Before(give); {
					time.Sleep(50 * time.Millisecond)
				}
			}()
			calls := f.markLoop(32, 1000, tag, stop, func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			})
			f.drain(t)
			st := f.m.Stats()
			if st.Refusals[wecom.CodeConcurrencyLimited] != 0 || st.MaxInFlight["/cgi-bin/externalcontact/mark_tag"] > 5 {
				t.Errorf("45033 answers %d, max in flight %d, want 0 and at most 5 (calls %d)",
					st.Refusals[wecom.CodeConcurrencyLimited], st.MaxInFlight["/cgi-bin/externalcontact/mark_tag"], calls)
			}
			if f.detached.Load() == 0 {
				t.Error("no attempt went on without its caller: the test did not test anything")
			}
			if f.abandoned.Load() != 0 {
				t.Errorf("%d attempts abandoned, want 0: every detached one got its answer", f.abandoned.Load())
			}
			// Another process's release no waiter of its wants may reach
			// Redis up to throttle's linger (20 ms) after its Release.
			n := 0
			for give := time.Now().Add(2 * time.Second); n != 5 && time.Now().Before(give); time.Sleep(10 * time.Millisecond) {
				n = freeSlots(f.limiters[0], testCorp, "/cgi-bin/externalcontact/mark_tag", 5)
			}
			if n != 5 {
				t.Errorf("%d of 5 slots free after Drain", n)
			}
		})
	}
}

// An attempt that times out itself after sending keeps its slots (per API and
// per customer) for the abandoned hold, and the retry of the call never
// overlaps the abandoned attempt on the same customer.
func TestAttemptTimeoutHoldsSlots(t *testing.T) {
	t.Parallel()
	for _, kind := range backendKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := newFaultFixture(t, mock.Config{}, newBackends(t, kind),
				wecom.WithAttemptTimeout(50*time.Millisecond), wecom.WithAbandonedHold(600*time.Millisecond),
				wecom.WithRetryPolicy(wecom.RetryPolicy{MaxRetries: 1, MaxConcurrencyRetries: 10, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond}))
			tag := f.tag(t)
			f.m.SetLatency(200 * time.Millisecond)
			f.m.ResetStats()
			stop := make(chan struct{})
			time.AfterFunc(500*time.Millisecond, func() { close(stop) })
			f.markLoop(8, 3, tag, stop, func() (context.Context, context.CancelFunc) {
				return context.WithCancel(context.Background())
			})
			time.Sleep(800 * time.Millisecond) // the last holds end, and the mock's calls with them
			st := f.m.Stats()
			if st.Refusals[wecom.CodeConcurrencyLimited] != 0 {
				t.Errorf("45033 answers %d, want 0", st.Refusals[wecom.CodeConcurrencyLimited])
			}
			if f.abandoned.Load() == 0 {
				t.Error("no attempt was abandoned: the test did not test anything")
			}
		})
	}
}

// The slot of an attempt that timed out after sending stays taken after the
// call returns; the slot of a request that never left (refused dial) goes
// back at once.
func TestSentOrNotDecidesTheSlot(t *testing.T) {
	t.Parallel()
	const path = "/cgi-bin/tag/list"
	tests := []struct {
		name     string
		baseURL  string
		wantFree int
	}{
		{"sent, no answer", fakeWeCom(t, nil), 0},
		{"never left", wecom.RefusedURL(t), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			limiter := throttle.NewMemory()
			c := setup(t, wecom.WithBaseURL(tt.baseURL), wecom.WithLimiter(limiter),
				wecom.WithTokenSource(wecom.TokenSourceFunc(func(context.Context) (wecom.Token, error) {
					return wecom.Token{Value: "tok-123456789", ExpiresAt: time.Now().Add(time.Hour)}, nil
				})),
				// 1 s: a loaded machine sends well within it.
				wecom.WithLimits(path, wecom.Limits{Concurrency: 1}), wecom.WithAttemptTimeout(time.Second),
				wecom.WithAbandonedHold(time.Hour), wecom.WithRetryPolicy(wecom.RetryPolicy{MaxRetries: wecom.NoRetries, MaxConcurrencyRetries: 1, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}))
			if _, err := c.Tags.List(context.Background()); err == nil {
				t.Fatal("call succeeded")
			}
			if n := freeSlots(limiter, testCorp, path, 1); n != tt.wantFree {
				t.Errorf("%d of 1 slot free after the call, want %d", n, tt.wantFree)
			}
		})
	}
}

// A caller that gives up returns before the answer; the slot goes back when
// the answer comes, and the observer sees the attempt as detached.
func TestDetachedAttemptReleasesOnAnswer(t *testing.T) {
	t.Parallel()
	const path = "/cgi-bin/tag/list"
	entered, answer := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-answer
		_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok","taglist":[]}`))
	}))
	t.Cleanup(srv.Close)
	limiter := throttle.NewMemory()
	var detached atomic.Int64
	c := setup(t, wecom.WithBaseURL(srv.URL), wecom.WithLimiter(limiter),
		wecom.WithTokenSource(wecom.TokenSourceFunc(func(context.Context) (wecom.Token, error) {
			return wecom.Token{Value: "tok-123456789", ExpiresAt: time.Now().Add(time.Hour)}, nil
		})),
		wecom.WithLimits(path, wecom.Limits{Concurrency: 1}),
		wecom.WithObserver(func(_ context.Context, a wecom.Attempt) {
			if a.Detached {
				detached.Add(1)
			}
		}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := c.Tags.List(ctx)
		done <- err
	}()
	<-entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("caller's error %v, want context.Canceled", err)
	}
	if n := freeSlots(limiter, testCorp, path, 1); n != 0 {
		t.Error("the slot was given back before WeCom answered")
	}
	close(answer)
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	if err := c.Drain(dctx); err != nil {
		t.Fatal(err)
	}
	if n := freeSlots(limiter, testCorp, path, 1); n != 1 {
		t.Error("the slot was not given back after the answer")
	}
	if detached.Load() != 1 {
		t.Errorf("observer saw %d detached attempts, want 1", detached.Load())
	}
}

// After WeCom invalidates the token while calls queue for slots, only calls
// already sent carry the old token: the rest take the new one when they get
// their slot.
func TestQueuedCallsTakeTheNewToken(t *testing.T) {
	t.Parallel()
	f := newFaultFixture(t, mock.Config{Latency: 10 * time.Millisecond}, nil)
	if _, err := f.c.Tags.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.m.ResetStats()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := f.c.Tags.List(context.Background()); err != nil {
					t.Errorf("List: %v", err)
					return
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	f.m.InvalidateTokens()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	st := f.m.Stats()
	t.Logf("%d answers 40014, %d gettoken calls", st.Refusals[wecom.CodeInvalidAccessToken], st.GetTokenCalls)
	// At most the 5 calls in flight, and those sent between the invalidation
	// and the first 40014 answer reaching the client, carry the old token.
	if got := st.Refusals[wecom.CodeInvalidAccessToken]; got > 10 {
		t.Errorf("%d calls answered 40014 after one invalidation, want at most 10 (5 in flight)", got)
	}
	if st.GetTokenCalls != 1 {
		t.Errorf("%d gettoken calls, want 1", st.GetTokenCalls)
	}
}

// freeSlots counts the free concurrency slots of (corp, path), up to max.
func freeSlots(m throttle.Backend, corp, path string, max int) int {
	key := "{" + corp + "}" + path
	var ls []throttle.Lease
	for range max {
		l, err := m.TryAcquire(context.Background(), throttle.Request{Key: key, Concurrency: max})
		if err != nil {
			break
		}
		ls = append(ls, l)
	}
	for _, l := range ls {
		_ = m.Release(context.Background(), l)
	}
	return len(ls)
}

// fakeWeCom serves gettoken and the canned answers of answers (by path); a
// call to any other path gets no answer until the test ends. It returns the
// server's URL.
func fakeWeCom(t *testing.T, answers map[string]string) string {
	t.Helper()
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cgi-bin/gettoken" {
			_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok","access_token":"tok-abcdefghijkl","expires_in":7200}`))
			return
		}
		if a, ok := answers[r.URL.Path]; ok {
			_, _ = w.Write([]byte(a))
			return
		}
		<-hang
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) })
	return srv.URL
}
