package wecom_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// Two processes' calls to an API capped at 5 in flight queue while the
// limiter's Redis is killed and restarted empty, or stopped (SIGSTOP) for a
// few seconds: every call succeeds, the stall observer hears that they wait
// on Redis, and WeCom never sees more than 5 in flight (no 45033).
func TestCallsRideOutARedisFault(t *testing.T) {
	t.Parallel() // servers of its own
	for _, pause := range []bool{false, true} {
		t.Run(map[bool]string{false: "Restart", true: "Pause"}[pause], func(t *testing.T) {
			t.Parallel()
			var (
				addr  string
				fault func() (end func())
			)
			if pause {
				addr, fault = redistest.StartPausableServer(t)
			} else {
				var restart, stop func()
				addr, restart, stop = redistest.StartServer(t)
				fault = func() func() { stop(); return restart }
			}
			srv := newMock(t, mock.Config{Latency: 5 * time.Millisecond})
			var waiting, done atomic.Int64
			var clients []*wecom.Client
			var sent sentCalls
			for i := range 2 { // two processes: a backend each
				b := faultBackend(t, addr, "wt:fault:")
				clients = append(clients, setup(t, on(srv), wecom.WithLimiter(b), wecom.WithObserver(sent.observer(i)), wecom.WithStallObserver(func(_ context.Context, _ string, s throttle.Stall) {
					if s.Reason == throttle.ReasonUnavailable {
						waiting.Add(1)
					}
				})))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard only
			defer cancel()
			const workers, each = 16, 30
			var wg sync.WaitGroup
			for i := range workers {
				c := clients[i%2]
				wg.Go(func() {
					for range each {
						if _, err := c.Tags.List(ctx); err != nil {
							t.Errorf("call: %v, want it to wait for Redis", err)
							return
						}
						done.Add(1)
					}
				})
			}
			for done.Load() < workers*each/4 && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			faultAt := time.Now()
			end := fault()
			for waiting.Load() == 0 && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(2 * time.Second) // Redis away a while longer
			end()
			backAt := time.Now()
			wg.Wait()
			st := srv.Stats()
			if n := done.Load(); n != workers*each {
				t.Errorf("%d of %d calls succeeded", n, workers*each)
			}
			if n, most := st.Refusals[wecom.CodeConcurrencyLimited], st.MaxInFlight[string(catalog.TagList)]; n != 0 || most > 5 {
				t.Errorf("WeCom answered 45033 %d times and saw %d calls in flight at most; want none, and 5", n, most)
				sent.logRefused(t, faultAt, backAt)
			}
		})
	}
}

// sentCalls records when each tag/list call of a test's clients was at
// WeCom, for a failure to show which calls a 45033 overlapped.
type sentCalls struct {
	mu    sync.Mutex
	calls []sentCall
}

type sentCall struct {
	client     int
	start, end time.Time
	leaseWait  time.Duration
	code       int
}

// observer records the calls of client i.
func (s *sentCalls) observer(i int) wecom.Observer {
	return func(_ context.Context, a wecom.Attempt) {
		if a.Path != string(catalog.TagList) || a.Duration == 0 {
			return
		}
		now := time.Now()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.calls = append(s.calls, sentCall{i, now.Add(-a.Duration), now, a.LeaseWait, a.ErrCode})
	}
}

// logRefused logs each call WeCom refused with 45033 and the calls at WeCom
// when it arrived, their times from Redis's fault (faultAt) and return
// (backAt).
func (s *sentCalls) logRefused(t *testing.T, faultAt, backAt time.Time) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("Redis faulted at 0, back at %s", backAt.Sub(faultAt))
	for _, r := range s.calls {
		if r.code != wecom.CodeConcurrencyLimited {
			continue
		}
		t.Logf("45033 to client %d: sent at %s after a lease wait of %s; at WeCom then:", r.client, r.start.Sub(faultAt), r.leaseWait)
		for _, o := range s.calls {
			if o != r && !o.start.After(r.start) && o.end.After(r.start) {
				t.Logf("  client %d, sent at %s after a lease wait of %s, answered at %s", o.client, o.start.Sub(faultAt), o.leaseWait, o.end.Sub(faultAt))
			}
		}
	}
}

// faultBackend is a process's Redis backend on the server at addr, quick to
// notice it gone and back (a probe every 50 ms, round trips bounded by 1 s).
func faultBackend(t *testing.T, addr, prefix string) *throttleredis.Backend {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix, RetryRedisAfter: 50 * time.Millisecond, OpTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// stuckExtend is a limiter whose Extend waits, as the Redis backend's does
// for a Redis that does not answer, until its context ends, and records how
// it ended.
type stuckExtend struct {
	*throttle.Memory
	ended chan error
}

func (s stuckExtend) Extend(ctx context.Context, _ throttle.Lease, _ time.Duration) (throttle.Lease, error) {
	<-ctx.Done()
	s.ended <- ctx.Err()
	return throttle.Lease{}, ctx.Err()
}

// A call whose lease renewal waits for the limiter when WeCom answers ends
// the renewal (its context is cancelled, not left to time out) rather than
// wait for the limiter's store to answer.
func TestAnswerCutsAStuckRenewalShort(t *testing.T) {
	t.Parallel() // waits on the mock's latency
	srv := newMock(t, mock.Config{Latency: 2 * time.Second})
	lim := stuckExtend{Memory: throttle.NewMemory(), ended: make(chan error, 8)}
	c := setup(t, on(srv), wecom.WithLimiter(lim), wecom.WithLeaseTTL(3*time.Second)) // renewed at 1.5 s, for up to 1.5 s
	if _, err := c.Tags.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lim.ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the renewal under way when WeCom answered ended with %v, want it cancelled by the call's end", err)
		}
	default:
		t.Error("no renewal was under way when WeCom answered")
	}
}

// restartAround is a Redis backend that runs hook, once, around its first
// acquisition of a key holding match: before it (after: false), or after it
// was granted (after: true). The hook restarts Redis while a call holds its
// API slot.
type restartAround struct {
	*throttleredis.Backend
	match string
	after bool
	once  sync.Once
	hook  func()
}

func (r *restartAround) Acquire(ctx context.Context, req throttle.Request) (throttle.Lease, error) {
	if !strings.Contains(req.Key, r.match) {
		return r.Backend.Acquire(ctx, req)
	}
	if !r.after {
		r.once.Do(r.hook)
	}
	l, err := r.Backend.Acquire(ctx, req)
	if r.after && err == nil {
		r.once.Do(r.hook)
	}
	return l, err
}

// A call holds its API slot while Redis restarts empty, and another
// process's calls take every slot the new Redis has: the call waits for
// another lease (its egress IP's window; its access token's fetch, which
// takes the fetch's lock), or is held up between its grant and its send
// (as a caller descheduled on a saturated machine). The call does not go
// out on the slot the new Redis forgot: it starts over and waits for one it
// counts (no 45033). Without the era check it went out at once, a sixth
// call in flight.
func TestCallRetakesASlotForgottenInARestart(t *testing.T) {
	t.Parallel()
	const egress = "203.0.113.7"
	for _, tc := range []struct {
		name, match string
		after       bool
		opts        []wecom.Option
	}{
		{"egress window", egress, false, []wecom.Option{wecom.WithEgress(egress)}},
		{"token fetch", catalog.GetToken.Path(), false, nil},
		{"after the grant", string(catalog.TagList), true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a server of its own
			addr, restart, _ := redistest.StartServer(t)
			srv := newMock(t, mock.Config{Latency: time.Second})
			other := setup(t, append([]wecom.Option{on(srv), wecom.WithLimiter(faultBackend(t, addr, "wt:forgot:"))}, tc.opts...)...)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard only
			defer cancel()
			var wg sync.WaitGroup
			defer wg.Wait()
			var ran atomic.Bool
			lim := &restartAround{Backend: faultBackend(t, addr, "wt:forgot:"), match: tc.match, after: tc.after, hook: func() {
				ran.Store(true)
				restart()
				for range 5 {
					wg.Go(func() {
						if _, err := other.Tags.List(ctx); err != nil {
							t.Errorf("the other process's call: %v", err)
						}
					})
				}
				for srv.Stats().Calls[string(catalog.TagList)] < 5 && ctx.Err() == nil {
					time.Sleep(5 * time.Millisecond) // the other process's 5 calls at WeCom
				}
			}}
			c := setup(t, append([]wecom.Option{on(srv), wecom.WithLimiter(lim)}, tc.opts...)...)
			if _, err := c.Tags.List(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if !ran.Load() {
				t.Fatalf("no acquisition of a key holding %q: Redis was not restarted", tc.match)
			}
			st := srv.Stats()
			if n, most := st.Refusals[wecom.CodeConcurrencyLimited], st.MaxInFlight[string(catalog.TagList)]; n != 0 || most > 5 {
				t.Errorf("WeCom answered 45033 %d times and saw %d calls in flight at most; want none, and 5", n, most)
			}
		})
	}
}
