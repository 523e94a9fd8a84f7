package wecom_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/throttle"
)

// slowToken is a token source whose first answer takes d.
func slowToken(d time.Duration) wecom.TokenSource {
	var first atomic.Bool
	return wecom.TokenSourceFunc(func(ctx context.Context) (wecom.Token, error) {
		if !first.Swap(true) {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return wecom.Token{}, ctx.Err()
			}
		}
		return wecom.Token{Value: "tok-abcdefghijkl", ExpiresAt: time.Now().Add(time.Hour)}, nil
	})
}

// A call waiting for its token keeps its slot alive: a token slower than the
// lease TTL lets no second call in beside it.
func TestSlotRenewedWhileTheTokenComes(t *testing.T) {
	t.Parallel()
	var inFlight, peak atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(50 * time.Millisecond)
		_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok","taglist":[]}`))
	}))
	t.Cleanup(srv.Close)
	c := setup(t, wecom.WithAgentID(1), wecom.WithBaseURL(srv.URL), wecom.WithTokenSource(slowToken(3*time.Second)),
		wecom.WithLimiter(throttle.NewMemory()), wecom.WithLeaseTTL(time.Second), // renewed twice or more, with room for a loaded machine
		wecom.WithLimits("/cgi-bin/tag/list", wecom.Limits{Concurrency: 1}))
	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.Tags.List(context.Background())
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	if p := peak.Load(); p != 1 {
		t.Errorf("%d calls in flight at once, want 1", p)
	}
}

// panicOnce is a transport that panics on its first request.
type panicOnce struct {
	next     http.RoundTripper
	panicked atomic.Bool
}

func (p *panicOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path != "/cgi-bin/gettoken" && !p.panicked.Swap(true) {
		panic("transport bug")
	}
	return p.next.RoundTrip(r)
}

// A panic while a call may be on its way reaches the caller, in either
// kind of context, and its slot is held as for a call with no answer, then
// freed: the next call goes through.
func TestPanicInTheExchange(t *testing.T) {
	t.Parallel()
	for _, cancellable := range []bool{false, true} {
		t.Run(map[bool]string{false: "background", true: "cancellable"}[cancellable], func(t *testing.T) {
			t.Parallel()
			base := fakeWeCom(t, map[string]string{"/cgi-bin/tag/list": `{"errcode":0,"errmsg":"ok","taglist":[]}`})
			c := setup(t, wecom.WithBaseURL(base), wecom.WithTransport(&panicOnce{next: http.DefaultTransport}),
				wecom.WithLimiter(throttle.NewMemory()), wecom.WithLeaseTTL(200*time.Millisecond),
				wecom.WithLimits("/cgi-bin/tag/list", wecom.Limits{Concurrency: 1}))
			ctx := context.Background()
			if cancellable {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Error("the transport's panic did not reach the caller")
					}
				}()
				_, _ = c.Tags.List(ctx)
			}()
			ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel2()
			if _, err := c.Tags.List(ctx2); err != nil {
				t.Errorf("the call after the panic: %v", err)
			}
		})
	}
}

// An attempt timeout that fires while the answer is being read is an
// attempt timeout, not the caller's deadline.
func TestAttemptTimeoutWhileReading(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cgi-bin/gettoken" {
			_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok","access_token":"tok-abcdefghijkl","expires_in":7200}`))
			return
		}
		w.Header().Set("Content-Length", "100")
		_, _ = w.Write([]byte(`{"errcode":0,`))
		w.(http.Flusher).Flush()
		<-hang
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) })
	c := setup(t, wecom.WithBaseURL(srv.URL), wecom.WithAttemptTimeout(200*time.Millisecond),
		wecom.WithRetryPolicy(wecom.RetryPolicy{MaxRetries: wecom.NoRetries}))
	_, err := c.Tags.List(context.Background())
	if !errors.Is(err, wecom.ErrAttemptTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v: ErrAttemptTimeout %t, DeadlineExceeded %t; want true, false", err,
			errors.Is(err, wecom.ErrAttemptTimeout), errors.Is(err, context.DeadlineExceeded))
	}
}

// A panic while the call fetched its credential (a token source's, handed
// to the caller) reaches the caller, and gives the call's slot back:
// nothing was sent. Before, the slot stayed held and renewed, and the next
// call waited for ever.
func TestPanicInTheCredentialFreesTheSlot(t *testing.T) {
	t.Parallel()
	base := fakeWeCom(t, map[string]string{"/cgi-bin/tag/list": `{"errcode":0,"errmsg":"ok","taglist":[]}`})
	var fetches atomic.Int32
	src := wecom.TokenSourceFunc(func(context.Context) (wecom.Token, error) {
		if fetches.Add(1) == 1 {
			panic("token source bug")
		}
		return wecom.Token{Value: "TOKEN", ExpiresAt: time.Now().Add(time.Hour)}, nil
	})
	c := setup(t, wecom.WithBaseURL(base), wecom.WithTokenSource(src), wecom.WithLimiter(throttle.NewMemory()),
		wecom.WithLeaseTTL(200*time.Millisecond), wecom.WithLimits("/cgi-bin/tag/list", wecom.Limits{Concurrency: 1}))
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the token source's panic did not reach the caller")
			}
		}()
		_, _ = c.Tags.List(context.Background())
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Tags.List(ctx); err != nil {
		t.Errorf("the call after the panic: %v", err)
	}
}
