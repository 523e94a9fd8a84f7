package throttletest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// The tests of Request.With: concurrency slots on other keys taken together
// with a request, all or nothing.

// withSlot returns a With slot on key: one concurrency slot, nothing else.
func withSlot(e *env, key string) throttle.Request {
	return throttle.Request{Key: key, Concurrency: 1, TTL: 1000 * e.u}
}

// mustBeFree checks that no lease holds a slot on key.
func mustBeFree(t *testing.T, e *env, key string) {
	t.Helper()
	l, err := e.b.TryAcquire(context.Background(), throttle.Request{Key: key, Concurrency: 1, TTL: 100 * e.u})
	if err != nil {
		t.Fatalf("key %q: %v, want no slot held", key, err)
	}
	mustRelease(t, e.b, l)
}

// mustBeHeld checks that some lease holds a slot on key.
func mustBeHeld(t *testing.T, e *env, key string) {
	t.Helper()
	l, err := e.b.TryAcquire(context.Background(), throttle.Request{Key: key, Concurrency: 1, TTL: 100 * e.u})
	if err == nil {
		mustRelease(t, e.b, l)
		t.Fatalf("key %q is free, want a slot held", key)
	}
	limitError(t, err, throttle.ReasonConcurrency)
}

func testWithInvalid(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*e.u)
	defer cancel()
	with := func(s ...throttle.Request) throttle.Request {
		return throttle.Request{Key: "winv", Concurrency: 1, With: s}
	}
	ok := throttle.Request{Key: "winv-a", Concurrency: 1}
	for _, r := range []throttle.Request{
		with(throttle.Request{Concurrency: 1}),
		with(throttle.Request{Key: "winv", Concurrency: 1}),
		with(throttle.Request{Key: "winv-a"}),
		with(throttle.Request{Key: "winv-a", Concurrency: -1}),
		with(throttle.Request{Key: "winv-a", Concurrency: 1, TTL: -time.Second}),
		with(throttle.Request{Key: "winv-a", Concurrency: 1, Windows: []throttle.Window{{Limit: 5, Period: time.Minute}}}),
		with(throttle.Request{Key: "winv-a", Concurrency: 1, Weight: 2}),
		with(throttle.Request{Key: "winv-a", Concurrency: 1, WaitCooldown: true}),
		with(throttle.Request{Key: "winv-a", Concurrency: 1, With: []throttle.Request{{Key: "winv-b", Concurrency: 1}}}),
		with(ok, throttle.Request{Key: "winv-b", Concurrency: 1}, ok),
	} {
		l, err := e.b.TryAcquire(ctx, r)
		if !errors.Is(err, throttle.ErrInvalidRequest) {
			t.Errorf("TryAcquire(%+v) = %v, want ErrInvalidRequest", r, err)
		}
		_ = e.b.Release(ctx, l) // what a faulty backend granted, lest the next ones wait
		l, err = e.b.Acquire(ctx, r)
		if !errors.Is(err, throttle.ErrInvalidRequest) {
			t.Errorf("Acquire(%+v) = %v, want ErrInvalidRequest", r, err)
		}
		_ = e.b.Release(ctx, l)
	}
	// The shapes allowed: weight 1, TTL zero, a slot of several.
	r := with(throttle.Request{Key: "winv-a", Concurrency: 1, Weight: 1}, throttle.Request{Key: "winv-b", Concurrency: 2})
	l, err := e.b.TryAcquire(ctx, r)
	if err != nil {
		t.Fatalf("TryAcquire(%+v): %v", r, err)
	}
	mustRelease(t, e.b, l)
}

// testWithAllOrNothing: a refusal by a With slot names it and takes nothing,
// neither the request's slot nor its window counts.
func testWithAllOrNothing(t *testing.T, e *env) {
	ctx := context.Background()
	main := throttle.Request{Key: "waon", Concurrency: 2, TTL: 100 * e.u, Windows: []throttle.Window{{Limit: 3, Period: 100 * e.u}}}
	r := main
	r.With = []throttle.Request{withSlot(e, "waon-c1")}
	c1 := mustAcquire(t, ctx, e.b, withSlot(e, "waon-c1"))
	for range 10 {
		_, err := e.b.TryAcquire(ctx, r)
		if le := limitError(t, err, throttle.ReasonConcurrency); le.Key != "waon-c1" {
			t.Fatalf("refused by key %q, want the busy with slot waon-c1", le.Key)
		}
	}
	d := 50 * e.u
	if err := e.b.Cooldown(ctx, "waon-c2", d); err != nil {
		t.Fatal(err)
	}
	cool := main
	cool.With = []throttle.Request{withSlot(e, "waon-c2")}
	_, err := e.b.TryAcquire(ctx, cool)
	if le := limitError(t, err, throttle.ReasonCooldown); le.Key != "waon-c2" || le.RetryAfter <= 0 || le.RetryAfter > d {
		t.Errorf("refused by %q, retry after %s: want waon-c2's cooldown, in (0, %s]", le.Key, le.RetryAfter, d)
	}
	// The refusals took no slot on the request's key...
	mustBeFree(t, e, "waon")
	mustRelease(t, e.b, c1)
	// ... nor any of its window: three fit still.
	for i := range 3 {
		l, err := e.b.TryAcquire(ctx, r)
		if err != nil {
			t.Fatalf("acquisition %d of the window after 11 refusals: %v", i+1, err)
		}
		if len(l.With) != 1 || l.With[0].Key != "waon-c1" || !l.With[0].HoldsSlot() {
			t.Fatalf("lease %+v: want one with lease holding waon-c1", l)
		}
		mustBeHeld(t, e, "waon-c1")
		mustRelease(t, e.b, l)
	}
	_, err = e.b.TryAcquire(ctx, r)
	if le := limitError(t, err, throttle.ReasonRate); le.Key != "waon" {
		t.Errorf("refused by key %q, want the request's own window on waon", le.Key)
	}
	mustBeFree(t, e, "waon-c1") // the rate refusal took no with slot
}

func testWithReleaseFreesAll(t *testing.T, e *env) {
	ctx := context.Background()
	keys := []string{"wrel", "wrel-a", "wrel-b"}
	r := throttle.Request{Key: "wrel", Concurrency: 1, TTL: 100 * e.u, With: []throttle.Request{withSlot(e, "wrel-a"), withSlot(e, "wrel-b")}}
	l := mustAcquire(t, ctx, e.b, r)
	if l.Expires.IsZero() || len(l.With) != 2 || l.With[0].Key != "wrel-a" || l.With[1].Key != "wrel-b" ||
		!l.With[0].HoldsSlot() || !l.With[1].HoldsSlot() {
		t.Fatalf("lease %+v: want its own slot and with leases on wrel-a, wrel-b in order", l)
	}
	for _, k := range keys {
		mustBeHeld(t, e, k)
	}
	mustRelease(t, e.b, l)
	if err := e.b.Release(ctx, l); !errors.Is(err, throttle.ErrLeaseNotHeld) {
		t.Errorf("second Release = %v, want ErrLeaseNotHeld", err)
	}
	if _, err := e.b.Extend(ctx, l, time.Minute); !errors.Is(err, throttle.ErrLeaseNotHeld) {
		t.Errorf("Extend of a released lease = %v, want ErrLeaseNotHeld", err)
	}
	for _, k := range keys {
		mustBeFree(t, e, k)
	}
	// A lease without a slot of its own still holds its with slots.
	r = throttle.Request{Key: "wrel-rate", Windows: []throttle.Window{{Limit: 5, Period: time.Minute}}, With: []throttle.Request{withSlot(e, "wrel-a")}}
	l = mustAcquire(t, ctx, e.b, r)
	if !l.HoldsSlot() {
		t.Errorf("HoldsSlot of %+v = false, want true for its with slot", l)
	}
	mustBeHeld(t, e, "wrel-a")
	mustRelease(t, e.b, l)
	mustBeFree(t, e, "wrel-a")
}

// testWithExtend: Extend moves the With leases' expiries too, and their slots
// stay held past the first TTL.
func testWithExtend(t *testing.T, e *env) {
	ctx := context.Background()
	ttl := 25 * e.u // margins as testExtendKeepsSlot's
	r := throttle.Request{Key: "wext", Concurrency: 1, TTL: ttl, With: []throttle.Request{
		{Key: "wext-a", Concurrency: 1, TTL: ttl}, {Key: "wext-b", Concurrency: 1, TTL: ttl},
	}}
	holder := mustAcquire(t, ctx, e.b, r)
	time.Sleep(2 * e.u)
	ext, err := e.b.Extend(ctx, holder, 50*e.u)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if len(ext.With) != len(holder.With) {
		t.Fatalf("extended lease has %d with leases, want %d", len(ext.With), len(holder.With))
	}
	for i, s := range ext.With {
		if s.Key != holder.With[i].Key || !s.Expires.After(holder.With[i].Expires) {
			t.Fatalf("with lease %d: %q expiring %v after Extend, want %q later than %v", i, s.Key, s.Expires, holder.With[i].Key, holder.With[i].Expires)
		}
	}
	time.Sleep(ttl) // past the first expiry
	wctx, cancel := context.WithTimeout(ctx, 100*e.u)
	defer cancel()
	for _, s := range append([]throttle.Lease{ext}, ext.With...) {
		alone := throttle.Request{Key: s.Key, Concurrency: 1, TTL: ttl}
		l, err := e.b.TryAcquire(ctx, alone)
		if err != nil {
			limitError(t, err, throttle.ReasonConcurrency)
			l = mustAcquire(t, wctx, e.b, alone)
		}
		if l.Granted.Before(s.Expires) {
			t.Errorf("key %q granted at %v, before the extended expiry %v", s.Key, l.Granted, s.Expires)
		}
		mustRelease(t, e.b, l)
	}
}

// testWithWaitsApart: a request whose With slot is held waits for it holding
// nothing on its own key, and is granted once the slot is released.
func testWithWaitsApart(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*e.u)
	defer cancel()
	holder := mustAcquire(t, ctx, e.b, withSlot(e, "wapart-c"))
	r := throttle.Request{Key: "wapart", Concurrency: 1, TTL: 1000 * e.u, With: []throttle.Request{withSlot(e, "wapart-c")}}
	var l throttle.Lease
	got := make(chan error, 1)
	go func() {
		var err error
		l, err = e.b.Acquire(ctx, r)
		got <- err
	}()
	e.settle()
	select {
	case err := <-got:
		t.Fatalf("Acquire = %+v, %v while its with slot was held, want it to wait", l, err)
	default:
	}
	mustBeFree(t, e, "wapart") // the waiter keeps no slot of its own key idle
	mustRelease(t, e.b, holder)
	if err := <-got; err != nil {
		t.Fatalf("Acquire after the with slot's release: %v", err)
	}
	if l.Key != "wapart" || l.Expires.IsZero() || len(l.With) != 1 || l.With[0].Key != "wapart-c" || l.With[0].Expires.IsZero() {
		t.Fatalf("lease %+v: want its own slot and one with lease on wapart-c", l)
	}
	mustBeHeld(t, e, "wapart")
	mustBeHeld(t, e, "wapart-c")
	mustRelease(t, e.b, l)
	mustBeFree(t, e, "wapart-c")
}

// testWithMutualExclusion: many goroutines taking a shared key's slots with a
// per-customer lock never hold a customer twice nor the shared key over its
// limit.
func testWithMutualExclusion(t *testing.T, e *env) {
	const workers, rounds, customers, slots = 32, 20, 6, 4
	ctx, cancel := context.WithTimeout(context.Background(), 400*e.u)
	defer cancel()
	var onMain, peakMain, overlaps, done atomic.Int64
	var onCust [customers]atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range rounds {
				c := (7*g + i) % customers
				r := throttle.Request{Key: "wmx", Concurrency: slots, TTL: 1000 * e.u,
					With: []throttle.Request{withSlot(e, fmt.Sprintf("wmx-cust%d", c))}}
				l, err := e.b.Acquire(ctx, r)
				if err != nil {
					t.Errorf("worker %d, round %d: %v", g, i, err)
					return
				}
				if onCust[c].Add(1) > 1 {
					overlaps.Add(1)
				}
				n := onMain.Add(1)
				for p := peakMain.Load(); n > p && !peakMain.CompareAndSwap(p, n); p = peakMain.Load() {
				}
				time.Sleep(e.u / 10)
				onMain.Add(-1)
				onCust[c].Add(-1)
				if err := e.b.Release(context.Background(), l); err != nil {
					t.Errorf("Release: %v", err)
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if n := overlaps.Load(); n > 0 {
		t.Errorf("%d grants found their customer's slot already held", n)
	}
	if p := peakMain.Load(); p > slots {
		t.Errorf("peak holders of the shared key = %d, over its limit %d", p, slots)
	} else if p < 2 {
		t.Errorf("peak holders of the shared key = %d: the with slots serialized it", p)
	}
	t.Logf("%d grants, peak %d holders of %d slots", done.Load(), peakMain.Load(), slots)
}

// testWithCancelHoldsNothing: waiters cancelled while queued (as a release
// grants them) or while waiting apart for a With slot hold nothing after.
func testWithCancelHoldsNothing(t *testing.T, e *env) {
	const rounds, waiters, limit = 10, 8, 200
	ctx := context.Background()
	keys := []string{"wcan-0", "wcan-1", "wcan-2"}
	main := throttle.Request{Key: "wcan", Concurrency: 1, TTL: 1000 * e.u, Windows: []throttle.Window{{Limit: limit, Period: 1000 * e.u}}}
	var granted atomic.Int64
	for range rounds {
		holder := mustAcquire(t, ctx, e.b, main)
		var wg sync.WaitGroup
		cancels := make([]context.CancelFunc, waiters)
		for i := range waiters {
			wctx, cancel := context.WithCancel(ctx)
			cancels[i] = cancel
			r := main
			r.With = []throttle.Request{withSlot(e, keys[i%len(keys)])}
			wg.Go(func() {
				l, err := e.b.Acquire(wctx, r)
				if err == nil {
					granted.Add(1)
					err = e.b.Release(ctx, l)
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("waiter %d: %v", i, err)
				}
			})
		}
		e.settle()
		for _, cancel := range cancels {
			cancel()
		}
		mustRelease(t, e.b, holder) // grants waiters whose cancellation is under way
		wg.Wait()
		for _, k := range append([]string{"wcan"}, keys...) {
			mustBeFree(t, e, k)
		}
	}
	// Each holder counted one unit, every successful waiter one, the
	// cancelled grants none.
	left := 0
	for {
		_, err := e.b.TryAcquire(ctx, throttle.Request{Key: "wcan", Windows: main.Windows})
		if err != nil {
			limitError(t, err, throttle.ReasonRate)
			break
		}
		left++
	}
	if used := rounds + int(granted.Load()); used+left != limit {
		t.Errorf("%d units counted, %d left of %d: cancelled grants kept their window count", used, left, limit)
	}
	t.Logf("%d of %d cancelled waiters granted", granted.Load(), rounds*waiters)

	// A waiter that took one With slot and waits for another gives the
	// first back when cancelled.
	busy := mustAcquire(t, ctx, e.b, withSlot(e, "wcan-busy"))
	r := throttle.Request{Key: "wcan", Concurrency: 1, TTL: 1000 * e.u, With: []throttle.Request{withSlot(e, "wcan-0"), withSlot(e, "wcan-busy")}}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		l, err := e.b.Acquire(wctx, r)
		if err == nil {
			_ = e.b.Release(ctx, l)
		}
		done <- err
	}()
	e.settle()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter for a busy with slot: %v, want context.Canceled", err)
	}
	mustBeFree(t, e, "wcan-0")
	mustBeFree(t, e, "wcan")
	mustBeHeld(t, e, "wcan-busy")
	mustRelease(t, e.b, busy)
	mustBeFree(t, e, "wcan-busy")
}

// testWithOppositeOrders: two requests naming the same busy With slots in
// opposite orders both get them once they free: taken apart, the slots go
// in one order whatever the request's, so neither holds one the other
// waits for.
func testWithOppositeOrders(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), 400*e.u)
	defer cancel()
	a, b := mustAcquire(t, ctx, e.b, withSlot(e, "wopp-a")), mustAcquire(t, ctx, e.b, withSlot(e, "wopp-b"))
	reqs := []throttle.Request{
		{Key: "wopp-1", Concurrency: 1, TTL: 1000 * e.u, With: []throttle.Request{withSlot(e, "wopp-a"), withSlot(e, "wopp-b")}},
		{Key: "wopp-2", Concurrency: 1, TTL: 1000 * e.u, With: []throttle.Request{withSlot(e, "wopp-b"), withSlot(e, "wopp-a")}},
	}
	done := make(chan error, len(reqs))
	for _, r := range reqs {
		go func() {
			l, err := e.b.Acquire(ctx, r)
			if err == nil {
				if len(l.With) != 2 || l.With[0].Key != r.With[0].Key || l.With[1].Key != r.With[1].Key {
					t.Errorf("lease of %q: With %+v, want them in the request's order", r.Key, l.With)
				}
				err = e.b.Release(context.Background(), l)
			}
			done <- err
		}()
	}
	e.settle()
	mustRelease(t, e.b, a)
	mustRelease(t, e.b, b)
	for range reqs {
		if err := <-done; err != nil {
			t.Fatalf("a request with With slots in the other order: %v", err)
		}
	}
}

// testWithExtendPastALostLease: Extend of a lease one of whose With leases
// was lost reports ErrLeaseNotHeld but still extends the others, so that a
// call kept past its TTL (one WeCom has not answered) keeps every slot it
// still holds.
func testWithExtendPastALostLease(t *testing.T, e *env) {
	ctx := context.Background()
	ttl := 25 * e.u
	r := throttle.Request{Key: "wlost", Concurrency: 1, TTL: ttl, With: []throttle.Request{
		{Key: "wlost-a", Concurrency: 1, TTL: ttl}, {Key: "wlost-b", Concurrency: 1, TTL: ttl},
	}}
	l := mustAcquire(t, ctx, e.b, r)
	mustRelease(t, e.b, l.With[0]) // lost
	ext, err := e.b.Extend(ctx, l, 50*e.u)
	if !errors.Is(err, throttle.ErrLeaseNotHeld) {
		t.Fatalf("Extend with a lost With lease: %v, want ErrLeaseNotHeld", err)
	}
	if !ext.Expires.After(l.Expires) || !ext.With[1].Expires.After(l.With[1].Expires) {
		t.Fatalf("Extend stopped at the lost lease: own expiry %v -> %v, other With %v -> %v",
			l.Expires, ext.Expires, l.With[1].Expires, ext.With[1].Expires)
	}
	time.Sleep(ttl + 2*e.u) // past the first expiry
	mustBeHeld(t, e, "wlost")
	mustBeHeld(t, e, "wlost-b")
	ext.With = ext.With[1:]
	mustRelease(t, e.b, ext)
}
