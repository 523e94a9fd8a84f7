package redis_test

// Failing closed, a call waits for Redis to answer again rather than fail:
// Redis killed and restarted empty, or stopped (SIGSTOP) for a few seconds,
// under calls that queue.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// waitBackend is a backend on the private server at addr that probes Redis
// often and waits for it at most bound (0: the default).
func waitBackend(t *testing.T, addr, prefix string, bound time.Duration) *throttleredis.Backend {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix, RetryRedisAfter: 50 * time.Millisecond, OpTimeout: time.Second, WaitForRedis: bound})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		_ = rdb.Close()
	})
	return b
}

// Two processes' calls queue on a key while Redis is killed and restarted
// empty, or stopped for a few seconds: every call gets its lease (none
// fails), the waits are told as ReasonUnavailable, no more leases are held
// at once than the key's slots (across a restart, of those the new server
// granted), and a lease extended while Redis was stopped is extended once it
// answers. A request with Members and one with a With slot made in the
// fault wait too.
func TestRedisCallsWaitOutAFault(t *testing.T) {
	t.Parallel() // servers of its own
	for _, pause := range []bool{false, true} {
		t.Run(map[bool]string{false: "Restart", true: "Pause"}[pause], func(t *testing.T) {
			t.Parallel()
			var (
				addr         string
				fault        func() (end func())
				held         holderGauge // of the leases counted
				calls, stall atomic.Int64
				after        atomic.Bool // the fault has ended: count the holders the new server granted
			)
			if pause {
				var p func() func()
				addr, p = redistest.StartPausableServer(t)
				fault = p
			} else {
				var restart, stop func()
				addr, restart, stop = redistest.StartServer(t)
				fault = func() func() { stop(); return restart }
			}
			bs := []*throttleredis.Backend{waitBackend(t, addr, "wt:wait:", 0), waitBackend(t, addr, "wt:wait:", 0)}
			const slots, workers, each = 3, 24, 40
			r := throttle.Request{Key: "{corp}/wait", Concurrency: slots, TTL: 30 * time.Second,
				Windows: []throttle.Window{{Limit: 100000, Period: time.Minute}},
				OnStall: func(s throttle.Stall) {
					if s.Reason == throttle.ReasonUnavailable {
						stall.Add(1)
					}
				}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard only
			defer cancel()
			ext, err := bs[0].Acquire(ctx, throttle.Request{Key: "{corp}/wait-ext", Concurrency: 1, TTL: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}

			var wg sync.WaitGroup
			for i := range workers {
				b := bs[i%2]
				wg.Go(func() {
					for range each {
						l, err := b.Acquire(ctx, r)
						if err != nil {
							t.Errorf("Acquire: %v, want a lease", err)
							return
						}
						counted := pause || after.Load() // granted by the server that counts them all
						if counted {
							held.inc()
						}
						time.Sleep(2 * time.Millisecond)
						if counted {
							held.dec()
						}
						if err := b.Release(context.Background(), l); err != nil && !errors.Is(err, throttle.ErrLeaseNotHeld) {
							t.Errorf("Release: %v", err)
						}
						calls.Add(1)
					}
				})
			}
			for calls.Load() < workers*each/4 {
				time.Sleep(10 * time.Millisecond)
			}
			end := fault()
			extended := make(chan error, 1)
			if pause {
				go func() { _, err := bs[0].Extend(ctx, ext, time.Minute); extended <- err }()
			}
			// A request with Members, and one with a With slot, made in the fault.
			others := []throttle.Request{
				{Key: "{corp}/wait-members", Windows: []throttle.Window{{Limit: 100, Period: time.Minute}}, Members: []string{"a", "b"}},
				{Key: "{corp}/wait-with", Concurrency: 2, With: []throttle.Request{{Key: "{corp}/wait-lock", Concurrency: 1}}},
			}
			for i, o := range others {
				wg.Go(func() {
					l, err := bs[i].Acquire(ctx, o)
					if err != nil {
						t.Errorf("Acquire of %s in the fault: %v, want a lease", o.Key, err)
						return
					}
					if err := bs[i].Release(context.Background(), l); err != nil {
						t.Errorf("Release of %s: %v", o.Key, err)
					}
				})
			}
			// The calls queue until they are told that Redis does not answer.
			for stall.Load() == 0 && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(2 * time.Second) // Redis away a while longer: a failover's blip
			end()
			after.Store(true)
			wg.Wait()
			if pause {
				if err := <-extended; err != nil {
					t.Errorf("Extend while Redis was stopped: %v, want it extended once Redis answers", err)
				}
			}
			if n := calls.Load(); n != workers*each {
				t.Errorf("%d calls of %d got their lease", n, workers*each)
			}
			if m := held.peak.Load(); m > slots {
				t.Errorf("%d leases held at once, over the %d slots", m, slots)
			}
			t.Logf("stalls told: %d; most held at once: %d", stall.Load(), held.peak.Load())
		})
	}
}

// Callers waiting on a Redis known down whose contexts end get their
// contexts' errors and leave nothing held: once Redis is back, every slot
// is free.
func TestRedisWaitEndsWithTheCaller(t *testing.T) {
	t.Parallel() // a server of its own
	addr, restart, stop := redistest.StartServer(t)
	b := waitBackend(t, addr, "wt:waitctx:", 0)
	told := make(chan struct{}, 16)
	r := throttle.Request{Key: "{corp}/waitctx", Concurrency: 2, Windows: []throttle.Window{{Limit: 1000, Period: time.Minute}},
		OnStall: func(s throttle.Stall) {
			if s.Reason == throttle.ReasonUnavailable {
				select {
				case told <- struct{}{}:
				default:
				}
			}
		}}
	if _, err := b.TryAcquire(context.Background(), throttle.Request{Key: "{corp}/waitctx-probe"}); err != nil {
		t.Fatal(err)
	}
	stop()
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() { _, err := b.Acquire(ctx, r); errs <- err }()
	}
	<-told // they wait on Redis
	cancel()
	for range cap(errs) {
		if err := <-errs; !errors.Is(err, context.Canceled) || errors.Is(err, throttle.ErrUnavailable) {
			t.Errorf("Acquire whose caller gave up waiting on Redis: %v, want context.Canceled", err)
		}
	}
	restart()
	if !robustEventually(30*time.Second, func() bool {
		var got []throttle.Lease
		for range r.Concurrency {
			l, err := b.TryAcquire(context.Background(), r)
			if err != nil {
				break
			}
			got = append(got, l)
		}
		for _, l := range got {
			_ = b.Release(context.Background(), l)
		}
		return len(got) == r.Concurrency
	}) {
		t.Error("a slot is held after the callers that waited on Redis gave up")
	}
}

// A Redis down for longer than WaitForRedis: Acquire and Extend fail then
// with ErrUnavailable, and Release fails nothing (it is made when Redis
// answers).
func TestRedisWaitBound(t *testing.T) {
	t.Parallel() // a server of its own
	addr, _, stop := redistest.StartServer(t)
	b := waitBackend(t, addr, "wt:waitbound:", 100*time.Millisecond)
	ctx := context.Background()
	r := throttle.Request{Key: "{corp}/waitbound", Concurrency: 2}
	l, err := b.Acquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := b.Acquire(ctx, r); !errors.Is(err, throttle.ErrUnavailable) {
		t.Errorf("Acquire with Redis gone past the bound: %v, want ErrUnavailable", err)
	}
	if _, err := b.Extend(ctx, l, time.Minute); !errors.Is(err, throttle.ErrUnavailable) {
		t.Errorf("Extend with Redis gone past the bound: %v, want ErrUnavailable", err)
	}
	if err := b.Release(ctx, l); err != nil {
		t.Errorf("Release with Redis gone: %v, want nil (made when Redis answers)", err)
	}
}

// The calls queued in one line while Redis goes away share one bound,
// counted from when Redis was found down: each head in turn does not start
// a bound of its own. Six waiters behind a held slot, a bound of a second:
// every one fails with ErrUnavailable well within four seconds (one bound
// after another would take the last past six).
func TestRedisWaitBoundSharedByTheLine(t *testing.T) {
	t.Parallel() // a server of its own
	addr, _, stop := redistest.StartServer(t)
	b := waitBackend(t, addr, "wt:waitline:", time.Second)
	r := throttle.Request{Key: "{corp}/waitline", Concurrency: 1}
	if _, err := b.Acquire(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	const n = 6
	errs := make(chan error, n)
	queued := make(chan struct{}, n)
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			queued <- struct{}{}
			_, err := b.Acquire(ctx, r)
			errs <- err
		}()
	}
	for range n {
		<-queued
	}
	time.Sleep(100 * time.Millisecond) // in line behind the held slot
	stop()
	for range n {
		if err := <-errs; !errors.Is(err, throttle.ErrUnavailable) {
			t.Errorf("a waiter queued as Redis went away: %v, want ErrUnavailable within its deadline", err)
		}
	}
}
