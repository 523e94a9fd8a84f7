// Conformance tests of Request.With that wait: apart, exclusion, cancellation, order.
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
	keys := []string{"wcan-0", "wcan-1", "wcan-2"}
	main := throttle.Request{Key: "wcan", Concurrency: 1, TTL: 1000 * e.u, Windows: []throttle.Window{{Limit: limit, Period: 1000 * e.u}}}
	var granted atomic.Int64
	for range rounds {
		withCancelRound(t, e, main, keys, waiters, &granted)
	}
	withCancelCounted(t, e, main, rounds+int(granted.Load()), limit)
	t.Logf("%d of %d cancelled waiters granted", granted.Load(), rounds*waiters)
	withCancelWaitingApart(t, e)
}

// withCancelRound is one round of testWithCancelHoldsNothing: waiters queued
// behind a holder of main, each with a With slot on one of keys, are cancelled
// as the holder releases; after, every slot is free. granted counts the
// waiters granted all the same.
func withCancelRound(t *testing.T, e *env, main throttle.Request, keys []string, waiters int, granted *atomic.Int64) {
	t.Helper()
	ctx := context.Background()
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

// withCancelCounted checks that main's window counted used units of limit:
// each holder counted one unit, every successful waiter one, the cancelled
// grants none.
func withCancelCounted(t *testing.T, e *env, main throttle.Request, used, limit int) {
	t.Helper()
	ctx := context.Background()
	left := 0
	// Units a backend took ahead for its waiters (the Redis backend's
	// blocks) come back when unused: drain again until they have, or
	// for two seconds.
	for give := time.Now().Add(2 * time.Second); used+left < limit && time.Now().Before(give); time.Sleep(20 * time.Millisecond) {
		for {
			_, err := e.b.TryAcquire(ctx, throttle.Request{Key: "wcan", Windows: main.Windows})
			if err != nil {
				limitError(t, err, throttle.ReasonRate)
				break
			}
			left++
		}
	}
	if used+left != limit {
		t.Errorf("%d units counted, %d left of %d: cancelled grants kept their window count", used, left, limit)
	}
}

// withCancelWaitingApart: a waiter that took one With slot and waits for
// another gives the first back when cancelled.
func withCancelWaitingApart(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
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

// testWithApartRenews: a request taking its With slots apart holds the
// first while it waits for the second; if the first expired meanwhile and
// another call took it, the request does not come back with the expired
// lease: it starts over, and its lease holds every slot it names.
func testWithApartRenews(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), 400*e.u)
	defer cancel()
	a := throttle.Request{Key: "wrenew-a", Concurrency: 1, TTL: 10 * e.u}
	b := withSlot(e, "wrenew-b")
	holder := mustAcquire(t, ctx, e.b, b)
	r := throttle.Request{Key: "wrenew", Concurrency: 5, TTL: 1000 * e.u, With: []throttle.Request{a, b}}
	got := make(chan throttle.Lease, 1)
	go func() {
		l, err := e.b.Acquire(ctx, r)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(20 * e.u) // a's first lease has expired
	other, err := e.b.TryAcquire(ctx, a)
	if err != nil {
		t.Fatalf("a's lock after its TTL: %v", err)
	}
	mustRelease(t, e.b, holder)
	l := <-got
	if len(l.With) != 2 {
		t.Fatalf("lease %+v: want two With leases", l)
	}
	if err := e.b.Release(ctx, l); err != nil {
		t.Errorf("Release of the returned lease: %v (one of its slots was not held)", err)
	}
	_ = e.b.Release(ctx, other)
}
