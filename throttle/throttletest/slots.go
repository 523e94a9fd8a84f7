// Conformance tests of concurrency slots: invalid requests, the bound, TTL, Extend and Release.
package throttletest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

func testInvalid(t *testing.T, e *env) {
	ctx := context.Background()
	for _, r := range []throttle.Request{
		{},
		{Key: "k", Concurrency: -1},
		{Key: "k", Concurrency: 1, TTL: -time.Second},
		{Key: "k", Windows: []throttle.Window{{Limit: 0, Period: time.Minute}}},
		{Key: "k", Windows: []throttle.Window{{Limit: 1, Period: 0}}},
		{Key: "k", Weight: -1, Windows: []throttle.Window{{Limit: 5, Period: time.Minute}}},
		{Key: "k", Weight: 6, Windows: []throttle.Window{{Limit: 5, Period: time.Minute}}},
	} {
		if _, err := e.b.TryAcquire(ctx, r); !errors.Is(err, throttle.ErrInvalidRequest) {
			t.Errorf("TryAcquire(%+v) = %v, want ErrInvalidRequest", r, err)
		}
		if _, err := e.b.Acquire(ctx, r); !errors.Is(err, throttle.ErrInvalidRequest) {
			t.Errorf("Acquire(%+v) = %v, want ErrInvalidRequest", r, err)
		}
	}
	if err := e.b.Cooldown(ctx, "", time.Second); !errors.Is(err, throttle.ErrInvalidRequest) {
		t.Errorf("Cooldown with empty key = %v, want ErrInvalidRequest", err)
	}
}

// testConcurrencyBound: 200 goroutines, 5 slots: never more than 5 holders,
// and the 5 are used.
func testConcurrencyBound(t *testing.T, e *env) {
	const slots, workers, rounds = 5, 200, 3
	r := throttle.Request{Key: "bound", Concurrency: slots, TTL: 1000 * e.u}
	var inFlight, peak, done atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := e.b.Acquire(context.Background(), r)
				if err != nil {
					t.Errorf("Acquire: %v", err)
					return
				}
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(e.u / 10)
				inFlight.Add(-1)
				if err := e.b.Release(context.Background(), l); err != nil {
					t.Errorf("Release: %v", err)
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := done.Load(); got != workers*rounds {
		t.Fatalf("%d acquisitions completed, want %d", got, workers*rounds)
	}
	if p := peak.Load(); p > slots {
		t.Fatalf("peak holders = %d, over the bound %d", p, slots)
	} else if p < slots {
		t.Errorf("peak holders = %d, want the slots used (%d)", p, slots)
	}
}

func testTryWhenFull(t *testing.T, e *env) {
	ctx := context.Background()
	r := throttle.Request{Key: "try", Concurrency: 2, TTL: 100 * e.u}
	a, err := e.b.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.b.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if !a.HoldsSlot() || a.ID == b.ID {
		t.Fatalf("leases %+v and %+v: want two distinct slots", a, b)
	}
	_, err = e.b.TryAcquire(ctx, r)
	if le := limitError(t, err, throttle.ReasonConcurrency); le.RetryAfter != 0 {
		t.Errorf("RetryAfter = %s for a concurrency refusal, want 0 (unknown)", le.RetryAfter)
	}
	mustRelease(t, e.b, a)
	c, err := e.b.TryAcquire(ctx, r)
	if err != nil {
		t.Fatalf("TryAcquire after a release: %v", err)
	}
	mustRelease(t, e.b, b)
	mustRelease(t, e.b, c)
}

// testReleaseHandsOver: a released slot goes to the waiter at once, not when
// the holder's TTL would have ended, and (in a bubble) with no time passing.
func testReleaseHandsOver(t *testing.T, e *env) {
	r := throttle.Request{Key: "handover", Concurrency: 1, TTL: 1000 * e.u}
	holder := mustAcquire(t, context.Background(), e.b, r)
	got := make(chan throttle.Lease, 1)
	go func() {
		l, err := e.b.Acquire(context.Background(), r)
		if err != nil {
			t.Errorf("waiter: %v", err)
			close(got)
			return
		}
		got <- l
	}()
	e.settle()
	select {
	case l := <-got:
		t.Fatalf("waiter granted %+v while the slot was held", l)
	default:
	}
	released := time.Now()
	mustRelease(t, e.b, holder)
	l, ok := <-got
	if !ok {
		return
	}
	if !l.Granted.Before(holder.Expires) {
		t.Errorf("waiter granted at %v, not before the holder's expiry %v: the release was not handed over", l.Granted, holder.Expires)
	}
	if e.synthetic && !l.Granted.Equal(released) {
		t.Errorf("waiter granted %s after the release, want at once", l.Granted.Sub(released))
	}
	mustRelease(t, e.b, l)
}

func testReleaseTwice(t *testing.T, e *env) {
	ctx := context.Background()
	l := mustAcquire(t, ctx, e.b, throttle.Request{Key: "twice", Concurrency: 1})
	if l.Expires.Sub(l.Granted) != throttle.DefaultTTL {
		t.Errorf("lease TTL = %s, want DefaultTTL %s", l.Expires.Sub(l.Granted), throttle.DefaultTTL)
	}
	mustRelease(t, e.b, l)
	if err := e.b.Release(ctx, l); !errors.Is(err, throttle.ErrLeaseNotHeld) {
		t.Errorf("second Release = %v, want ErrLeaseNotHeld", err)
	}
	if _, err := e.b.Extend(ctx, l, time.Minute); !errors.Is(err, throttle.ErrLeaseNotHeld) {
		t.Errorf("Extend of a released lease = %v, want ErrLeaseNotHeld", err)
	}
	free := mustAcquire(t, ctx, e.b, throttle.Request{Key: "twice-rate", Windows: []throttle.Window{{Limit: 5, Period: time.Minute}}})
	if free.HoldsSlot() {
		t.Errorf("a lease without concurrency holds a slot: %+v", free)
	}
	if err := e.b.Release(ctx, free); err != nil {
		t.Errorf("Release of a slotless lease = %v, want nil", err)
	}
}

// testTTLFreesSlot: a holder that never releases loses its slot at its TTL.
func testTTLFreesSlot(t *testing.T, e *env) {
	ttl := 5 * e.u
	r := throttle.Request{Key: "ttl", Concurrency: 1, TTL: ttl}
	holder := mustAcquire(t, context.Background(), e.b, r)
	if got := holder.Expires.Sub(holder.Granted); got != ttl {
		t.Fatalf("lease TTL = %s, want %s", got, ttl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*e.u)
	defer cancel()
	// The waiter's own lease lasts long enough that a loaded machine does
	// not see it expire before its Release below.
	waiter := r
	waiter.TTL = 100 * e.u
	l := mustAcquire(t, ctx, e.b, waiter)
	if grantedBefore(l, holder.Expires) {
		t.Errorf("waiter granted at %v, before the holder's expiry %v", l.Granted, holder.Expires)
	}
	if err := e.b.Release(context.Background(), holder); !errors.Is(err, throttle.ErrLeaseNotHeld) {
		t.Errorf("Release of an expired lease = %v, want ErrLeaseNotHeld", err)
	}
	if _, err := e.b.Extend(context.Background(), holder, ttl); !errors.Is(err, throttle.ErrLeaseNotHeld) {
		t.Errorf("Extend of an expired lease = %v, want ErrLeaseNotHeld", err)
	}
	mustRelease(t, e.b, l)
}

// testExtendKeepsSlot: an extended lease keeps its slot past its first expiry.
func testExtendKeepsSlot(t *testing.T, e *env) {
	// Margins wide enough for a loaded machine on real time.
	r := throttle.Request{Key: "extend", Concurrency: 1, TTL: 25 * e.u}
	holder := mustAcquire(t, context.Background(), e.b, r)
	time.Sleep(2 * e.u)
	ext, err := e.b.Extend(context.Background(), holder, 50*e.u)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if !ext.Expires.After(holder.Expires) {
		t.Fatalf("Extend moved expiry from %v to %v, want later", holder.Expires, ext.Expires)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*e.u)
	defer cancel()
	l := mustAcquire(t, ctx, e.b, r)
	if grantedBefore(l, ext.Expires) {
		t.Errorf("waiter granted at %v, before the extended expiry %v", l.Granted, ext.Expires)
	}
	mustRelease(t, e.b, l)
}

// testExtendShortens: Extend to less than a lease has left moves its
// expiry earlier, and the slot frees up then: on a key of one slot (a
// lock) as on a key of several.
func testExtendShortens(t *testing.T, e *env) {
	ctx := context.Background()
	for _, conc := range []int{1, 2} {
		r := throttle.Request{Key: "shorten" + strconv.Itoa(conc), Concurrency: conc, TTL: time.Hour}
		var held []throttle.Lease
		for range conc {
			held = append(held, mustAcquire(t, ctx, e.b, r))
		}
		ext, err := e.b.Extend(ctx, held[0], 5*e.u)
		if err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if !ext.Expires.Before(held[0].Expires) {
			t.Fatalf("Extend moved expiry from %v to %v, want earlier", held[0].Expires, ext.Expires)
		}
		wctx, cancel := context.WithTimeout(ctx, 100*e.u)
		l := mustAcquire(t, wctx, e.b, r)
		cancel()
		if grantedBefore(l, ext.Expires) {
			t.Errorf("concurrency %d: waiter granted at %v, before the shortened expiry %v", conc, l.Granted, ext.Expires)
		}
		for _, h := range append(held[1:], l) {
			mustRelease(t, e.b, h)
		}
	}
}

// grantedBefore reports whether l was granted before t, beyond the
// millisecond a backend counting in the server's milliseconds may read
// early (its Granted, an estimate of the server's clock, is finer than
// the expiry it is compared with).
func grantedBefore(l throttle.Lease, t time.Time) bool {
	return l.Granted.Add(time.Millisecond).Before(t)
}
