package throttletest

import (
	"context"
	"errors"
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
		if grantedBefore(l, s.Expires) {
			t.Errorf("key %q granted at %v, before the extended expiry %v", s.Key, l.Granted, s.Expires)
		}
		mustRelease(t, e.b, l)
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
