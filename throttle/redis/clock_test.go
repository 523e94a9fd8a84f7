package redis_test

// The backend never sends this process's clock to Redis: every time it
// works with comes from the server.

import (
	"context"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// redisServerTime returns the Redis server's clock.
func redisServerTime(t *testing.T, rdb redis.UniversalClient) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Errorf("TIME: %v", err)
	}
	return now
}

var robustDigitRun = regexp.MustCompile(`[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?`)

// numbersIn returns every number an argument spells: the argument itself if
// numeric, every run of digits in a string. ok is false for an argument of
// a type the check does not understand.
func numbersIn(arg any) (nums []float64, ok bool) {
	switch v := arg.(type) {
	case string:
		for _, m := range robustDigitRun.FindAllString(v, -1) {
			if f, err := strconv.ParseFloat(m, 64); err == nil && !math.IsInf(f, 0) {
				nums = append(nums, f)
			}
		}
		return nums, true
	case []byte:
		return numbersIn(string(v))
	case bool, nil:
		return nil, true
	}
	rv := reflect.ValueOf(arg)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return []float64{float64(rv.Int())}, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return []float64{float64(rv.Uint())}, true
	case reflect.Float32, reflect.Float64:
		return []float64{rv.Float()}, true
	}
	return nil, false
}

// TestRedisNoClientClock proves that the backend never sends this process's
// clock to Redis: every time it works with comes from the server.
//
// The requirement is that one process's clock set an hour off changes
// nothing. That cannot be staged for a Go process on this machine: Go reads
// CLOCK_REALTIME itself, through the vDSO, without calling into libc, so
// libfaketime's LD_PRELOAD interposition never sees it (and a static Go
// binary loads no libc at all); Linux time namespaces offset only
// CLOCK_MONOTONIC and CLOCK_BOOTTIME, never CLOCK_REALTIME; and setting the
// system clock would move the Redis server's clock too (and needs
// privileges). So this test proves the property the requirement rests on
// instead: a hook on the client records every command the backend sends, and
// no number in any of them is near the current time in seconds,
// milliseconds, microseconds or nanoseconds, except an exact echo of a time
// the server itself answered (the grant time a cancelled grant refunds). A
// process whose clock is off by any amount therefore sends exactly the same
// commands, and the server, whose clock alone decides, treats it the same.
// The grant times the backend reports are checked against the server's
// TIME, read right after each grant.
func TestRedisNoClientClock(t *testing.T) {
	t.Parallel()
	rdb := redistest.Single(t) // a client of its own: the hook sees only this test
	rec := newCmdRecorder()
	rdb.AddHook(rec)
	b, _ := robustBackend(t, rdb, throttleredis.Options{})
	ctx := context.Background()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	c := &clockRun{t: t, rdb: rdb, b: b, ctx: ctx, wctx: wctx}

	c.concurrency()
	c.rateWindows()
	c.holderTTL()
	c.cooldowns()
	c.refunds()

	args, names, replies := rec.snapshot()
	scripts := 0
	for _, n := range names {
		if strings.HasPrefix(n, "evalsha") || strings.HasPrefix(n, "eval") {
			scripts++
		}
	}
	if scripts < 20 || c.grants.Load() < 15 {
		t.Fatalf("the hook saw %d script calls for %d grants: the workload did not run through it", scripts, c.grants.Load())
	}
	echoes := checkNoClientTimes(t, args, replies)
	t.Logf("%d commands checked (%d script calls, %d grants); %d echoes of server times", len(args), scripts, c.grants.Load(), echoes)
}

// clockRun is the workload of TestRedisNoClientClock: every way of using the
// backend that involves a time, each grant's times checked against the
// server's clock.
type clockRun struct {
	t      *testing.T
	rdb    redis.UniversalClient
	b      *throttleredis.Backend
	ctx    context.Context
	wctx   context.Context // for the waits, bounded
	grants atomic.Int64
}

// checkLease compares a lease's times with the server's clock read just
// after it was granted or extended.
func (c *clockRun) checkLease(l throttle.Lease, ttl time.Duration) {
	t := c.t
	t.Helper()
	srv := redisServerTime(t, c.rdb)
	c.grants.Add(1)
	// A lease handed on from window units taken ahead counts at the end
	// of their block: up to MaxBlockSpan after the server's time.
	if l.Granted.After(srv.Add(throttleredis.MaxBlockSpan)) || srv.Sub(l.Granted) > 2*time.Second {
		t.Errorf("lease granted at %d ms; the server's TIME right after was %d ms", l.Granted.UnixMilli(), srv.UnixMilli())
	}
	if ttl > 0 {
		start := l.Expires.Add(-ttl)
		if start.After(srv) || srv.Sub(start) > 2*time.Second {
			t.Errorf("lease expires at %d ms, TTL %s; the server's TIME right after was %d ms", l.Expires.UnixMilli(), ttl, srv.UnixMilli())
		}
	}
}

func (c *clockRun) acquire(ctx context.Context, r throttle.Request) throttle.Lease {
	c.t.Helper()
	l, err := c.b.Acquire(ctx, r)
	if err != nil {
		c.t.Fatalf("Acquire(%q): %v", r.Key, err)
	}
	ttl := time.Duration(0)
	if r.Concurrency > 0 {
		ttl = r.LeaseTTL()
	}
	c.checkLease(l, ttl)
	return l
}

func (c *clockRun) release(l throttle.Lease) {
	c.t.Helper()
	if err := c.b.Release(c.ctx, l); err != nil {
		c.t.Fatalf("Release(%q): %v", l.Key, err)
	}
}

// concurrency: concurrency and windows together, a wait for a release,
// Extend.
func (c *clockRun) concurrency() {
	t, b, ctx := c.t, c.b, c.ctx
	t.Helper()
	conc := throttle.Request{Key: "{corp}/conc", Concurrency: 2, TTL: 10 * time.Second,
		Windows: []throttle.Window{{Limit: 50, Period: 2 * time.Second}, {Limit: 100, Period: time.Minute}}}
	h1, h2 := c.acquire(ctx, conc), c.acquire(ctx, conc)
	waited := make(chan throttle.Lease, 1)
	go func() {
		l, err := b.Acquire(c.wctx, conc)
		if err != nil {
			t.Errorf("waiter: %v", err)
			close(waited)
			return
		}
		c.checkLease(l, conc.TTL)
		waited <- l
	}()
	time.Sleep(50 * time.Millisecond)
	_, err := b.TryAcquire(ctx, conc)
	robustWantLimit(t, err, throttle.ReasonConcurrency)
	ext, err := b.Extend(ctx, h1, 20*time.Second)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	c.checkLease(throttle.Lease{Granted: h1.Granted, Expires: ext.Expires}, 20*time.Second) // Expires-20s: the server's time of the Extend
	if d := ext.Expires.Sub(h1.Granted); d < 20*time.Second {
		t.Errorf("Extend by 20s moved the expiry to %s after the grant", d)
	}
	c.release(ext)
	if l, ok := <-waited; ok {
		c.release(l)
	}
	c.release(h2)
}

// rateWindows: a wait for a rate window to open, and one refused at once.
func (c *clockRun) rateWindows() {
	t, b, ctx := c.t, c.b, c.ctx
	t.Helper()
	rate := throttle.Request{Key: "{corp}/rate", Windows: []throttle.Window{{Limit: 3, Period: 300 * time.Millisecond}}}
	for range 7 {
		c.release(c.acquire(c.wctx, rate))
	}
	var err error
	for range 10 {
		if _, err = b.TryAcquire(ctx, rate); err != nil {
			break
		}
	}
	robustWantLimit(t, err, throttle.ReasonRate)
	long := throttle.Request{Key: "{corp}/long", Windows: []throttle.Window{{Limit: 1, Period: time.Hour}}}
	c.acquire(ctx, long)
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = b.Acquire(dctx, long) // fails at once: the wait outlasts the deadline
	dcancel()
	robustWantLimit(t, err, throttle.ReasonRate)
}

// holderTTL: a wait for an expired holder's TTL.
func (c *clockRun) holderTTL() {
	c.t.Helper()
	ttl := throttle.Request{Key: "{corp}/ttl", Concurrency: 1, TTL: 300 * time.Millisecond}
	dead := c.acquire(c.ctx, ttl)
	after := c.acquire(c.wctx, ttl)
	if after.Granted.Before(dead.Expires) {
		c.t.Errorf("granted at %d ms before the holder's expiry %d ms", after.Granted.UnixMilli(), dead.Expires.UnixMilli())
	}
	c.release(after)
}

// cooldowns: one waited out, one refused.
func (c *clockRun) cooldowns() {
	t, b, ctx := c.t, c.b, c.ctx
	t.Helper()
	cd := throttle.Request{Key: "{corp}/cooldown", Concurrency: 1, TTL: time.Second}
	if err := b.Cooldown(ctx, cd.Key, 500*time.Millisecond); err != nil {
		t.Fatalf("Cooldown: %v", err)
	}
	_, err := b.TryAcquire(ctx, cd)
	robustWantLimit(t, err, throttle.ReasonCooldown)
	patient := cd
	patient.WaitCooldown = true
	c.release(c.acquire(c.wctx, patient))
}

// refunds: grants racing their waiters' cancellation: the refunds echo the
// grant time the server answered.
func (c *clockRun) refunds() {
	t, b, ctx := c.t, c.b, c.ctx
	t.Helper()
	refund := throttle.Request{Key: "{corp}/refund", Concurrency: 1, TTL: 10 * time.Second,
		Windows: []throttle.Window{{Limit: 1000, Period: time.Minute}}}
	for range 3 {
		holder := c.acquire(ctx, refund)
		var wg sync.WaitGroup
		cancels := make([]context.CancelFunc, 20)
		for i := range cancels {
			wctx, cancel := context.WithCancel(c.wctx)
			cancels[i] = cancel
			wg.Go(func() {
				if l, err := b.Acquire(wctx, refund); err == nil {
					c.checkLease(l, refund.TTL)
					_ = b.Release(ctx, l)
				}
			})
		}
		time.Sleep(30 * time.Millisecond)
		var race sync.WaitGroup
		race.Go(func() {
			if err := b.Release(ctx, holder); err != nil {
				t.Errorf("Release(holder): %v", err)
			}
		})
		for _, cancel := range cancels {
			race.Go(cancel)
		}
		race.Wait()
		wg.Wait()
	}
}

// checkNoClientTimes fails the test for every number in args near the
// current time in seconds, milliseconds, microseconds or nanoseconds, but an
// exact echo of an integer the server answered (in replies). It returns the
// number of such echoes.
func checkNoClientTimes(t *testing.T, args [][]any, replies map[int64]bool) (echoes int) {
	t.Helper()
	now := time.Now()
	units := []struct {
		name  string
		now   float64
		slack float64 // two days in the unit
	}{
		{"s", float64(now.Unix()), 2 * 86400},
		{"ms", float64(now.UnixMilli()), 2 * 86400e3},
		{"µs", float64(now.UnixMicro()), 2 * 86400e6},
		{"ns", float64(now.UnixNano()), 2 * 86400e9},
	}
	for _, cmd := range args {
		for _, a := range cmd {
			nums, ok := numbersIn(a)
			if !ok {
				t.Errorf("command %v: argument %v of type %T", cmd, a, a)
			}
			for _, x := range nums {
				for _, u := range units {
					if math.Abs(x-u.now) > u.slack {
						continue
					}
					if x == math.Trunc(x) && replies[int64(x)] {
						echoes++ // a time the server answered, sent back
						continue
					}
					t.Errorf("command %v sends %v, a time near now in %s: the client's clock reaches Redis", cmd, a, u.name)
				}
			}
		}
	}
	return echoes
}
