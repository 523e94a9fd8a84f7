// Package throttletest is the conformance suite for throttle.Backend
// implementations. A backend proves it keeps the package's promises by calling
// Run from a test:
//
//	func TestConformance(t *testing.T) {
//		throttletest.Run(t, throttletest.Harness{
//			New: func(t *testing.T) throttle.Backend { return newBackend(t) },
//		})
//	}
//
// The suite drives hundreds of goroutines at once; run it with -race.
package throttletest

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// Harness describes the backend under test.
type Harness struct {
	// New returns a backend whose keys no other backend returned by New sees
	// (a fresh in-process backend, or a unique key prefix on a shared server).
	New func(t *testing.T) throttle.Backend
	// Synctest runs every test inside a testing/synctest bubble, so time is
	// virtual and exact. Only for backends whose clock is the time package's,
	// created inside the bubble. Otherwise the suite runs on real time with
	// short periods and asserts only what the backend's own clock (Lease.Granted,
	// Lease.Expires) shows, never a wall-clock duration.
	Synctest bool
	// FIFO says the backend serves waiters on one key strictly in arrival
	// order; the suite then checks it. It requires Synctest, the only way to know
	// that a waiter has arrived.
	FIFO bool
}

// env is what one test gets.
type env struct {
	b         throttle.Backend
	u         time.Duration // the time unit: 1s in a bubble, a few ms on real time
	synthetic bool
}

// settle lets the goroutines a test started reach their waits.
func (e *env) settle() {
	if e.synthetic {
		synctest.Wait()
		return
	}
	time.Sleep(4 * e.u)
}

// Run runs the whole suite against h.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"InvalidRequests", testInvalid},
		{"ConcurrencyBound", testConcurrencyBound},
		{"TryWhenFull", testTryWhenFull},
		{"ReleaseHandsOver", testReleaseHandsOver},
		{"ReleaseTwice", testReleaseTwice},
		{"TTLFreesSlot", testTTLFreesSlot},
		{"ExtendKeepsSlot", testExtendKeepsSlot},
		{"RateWindowsNeverExceeded", func(t *testing.T, e *env) {
			testRateWindows(t, e, []throttle.Window{{Limit: 20, Period: 10 * e.u}, {Limit: 50, Period: 40 * e.u}}, 160*e.u)
		}},
		{"RateWindowsThroughput", testRateThroughput},
		{"AllOrNothing", testAllOrNothing},
		{"Cooldown", testCooldown},
		{"DeadlineFailsFast", testDeadlineFailsFast},
		{"CancelManyWaiters", testCancelManyWaiters},
		{"KeysIndependent", testKeysIndependent},
		{"CooldownFailsNonWaitingBehindWaiting", testCooldownMixedWaiters},
		{"CancelledGrantsRefundWindow", func(t *testing.T, e *env) { cancelRefunds(t, e, 1) }},
		{"WaiterBehindFailsFast", testWaiterBehindFailsFast},
		{"WeightCounts", testWeightCounts},
		{"WeightsNeverExceedWindow", testWeightsNeverExceed},
		{"CancelledWeightedGrantsRefund", func(t *testing.T, e *env) { cancelRefunds(t, e, 3) }},
		{"LimitStore", testLimitStore},
		{"WithInvalid", testWithInvalid},
		{"WithAllOrNothing", testWithAllOrNothing},
		{"WithReleaseFreesAll", testWithReleaseFreesAll},
		{"WithExtend", testWithExtend},
		{"WithWaitsApart", testWithWaitsApart},
		{"WithMutualExclusion", testWithMutualExclusion},
		{"WithCancelHoldsNothing", testWithCancelHoldsNothing},
		{"WithOppositeOrders", testWithOppositeOrders},
		{"WithExtendPastALostLease", testWithExtendPastALostLease},
	}
	if h.FIFO {
		tests = append(tests, struct {
			name string
			fn   func(*testing.T, *env)
		}{"ArrivalOrder", testArrivalOrder})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if h.Synctest {
				synctest.Test(t, func(t *testing.T) {
					tc.fn(t, &env{b: h.New(t), u: time.Second, synthetic: true})
				})
				return
			}
			tc.fn(t, &env{b: h.New(t), u: 20 * time.Millisecond})
		})
	}
}

func limitError(t *testing.T, err error, want throttle.Reason) *throttle.LimitError {
	t.Helper()
	var le *throttle.LimitError
	if !errors.As(err, &le) || !errors.Is(err, throttle.ErrLimited) {
		t.Fatalf("err = %v, want a *LimitError matching ErrLimited", err)
	}
	if le.Reason != want {
		t.Fatalf("reason = %s, want %s (%v)", le.Reason, want, err)
	}
	return le
}

func mustAcquire(t *testing.T, ctx context.Context, b throttle.Backend, r throttle.Request) throttle.Lease {
	t.Helper()
	l, err := b.Acquire(ctx, r)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", r.Key, err)
	}
	return l
}

func mustRelease(t *testing.T, b throttle.Backend, l throttle.Lease) {
	t.Helper()
	if err := b.Release(context.Background(), l); err != nil {
		t.Fatalf("Release(%q): %v", l.Key, err)
	}
}

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
	l := mustAcquire(t, ctx, e.b, r)
	if l.Granted.Before(holder.Expires) {
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
	if l.Granted.Before(ext.Expires) {
		t.Errorf("waiter granted at %v, before the extended expiry %v", l.Granted, ext.Expires)
	}
	mustRelease(t, e.b, l)
}

// testRateWindows: saturating callers never exceed any window, in any sliding
// interval, and still get at least 98% of the binding window's rate.
// testRateWindows: 200 saturating callers never exceed any window in any
// sliding interval. It returns the sorted grant times.
func testRateWindows(t *testing.T, e *env, windows []throttle.Window, span time.Duration) []time.Time {
	t.Helper()
	r := throttle.Request{Key: "rate", Windows: windows}
	var mu sync.Mutex
	var starts []time.Time
	deadline := time.Now().Add(span)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			for {
				l, err := e.b.Acquire(ctx, r)
				if err != nil {
					// The only acceptable failures: the deadline came, or
					// the backend knew the wait would outlast it.
					var le *throttle.LimitError
					switch {
					case ctx.Err() != nil:
					case errors.As(err, &le) && le.Reason == throttle.ReasonRate && time.Now().Add(le.RetryAfter+e.u).After(deadline):
					default:
						t.Errorf("Acquire: %v", err)
					}
					return
				}
				mu.Lock()
				starts = append(starts, l.Granted)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(starts) == 0 {
		t.Fatal("no acquisition succeeded")
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for _, w := range windows {
		if n, at := maxInWindow(starts, w.Period); n > w.Limit {
			t.Errorf("window %s: %d starts in the %s ending %v", w, n, w.Period, at)
		}
	}
	return starts
}

// testRateThroughput: a saturated window still gives at least 98% of its
// rate in the long run. The first period's burst is left out, and the run is
// long enough (in a bubble) that a 2% shortfall per period would show.
func testRateThroughput(t *testing.T, e *env) {
	w := throttle.Window{Limit: 10, Period: 10 * e.u}
	periods := 15
	if e.synthetic {
		periods = 200
	}
	span := time.Duration(periods) * w.Period
	start := time.Now()
	starts := testRateWindows(t, e, []throttle.Window{w, {Limit: 1 << 30, Period: 1000 * e.u}}, span)
	from, end := starts[0].Add(w.Period), start.Add(span)
	n := 0
	for _, s := range starts {
		if !s.Before(from) && s.Before(end) {
			n++
		}
	}
	ideal := float64(w.Limit) * float64(end.Sub(from)) / float64(w.Period)
	ratio := float64(n) / ideal
	t.Logf("%d starts in %s after the first period: %.2f%% of %s", n, end.Sub(from), 100*ratio, w)
	// On real time a loaded machine delays wake-ups, which is not the
	// backend's doing: there only a gross shortfall fails.
	want := 0.98
	if !e.synthetic {
		want = 0.5
	}
	if ratio < want {
		t.Errorf("%.2f%% of the window's rate, want at least %.0f%%", 100*ratio, 100*want)
	}
}

// maxInWindow returns the most starts in any half-open interval (s-period, s].
func maxInWindow(sorted []time.Time, period time.Duration) (int, time.Time) {
	best, at, lo := 0, time.Time{}, 0
	for hi, s := range sorted {
		for !sorted[lo].After(s.Add(-period)) {
			lo++
		}
		if n := hi - lo + 1; n > best {
			best, at = n, s
		}
	}
	return best, at
}

// testAllOrNothing: a refusal takes nothing from the limits that were free.
func testAllOrNothing(t *testing.T, e *env) {
	ctx := context.Background()
	w := throttle.Window{Limit: 3, Period: 100 * e.u}
	r := throttle.Request{Key: "aon", Concurrency: 1, TTL: 100 * e.u, Windows: []throttle.Window{w}}
	l := mustAcquire(t, ctx, e.b, r)
	for range 10 {
		_, err := e.b.TryAcquire(ctx, r)
		limitError(t, err, throttle.ReasonConcurrency)
	}
	mustRelease(t, e.b, l)
	// The ten refusals used no window capacity: two more fit.
	for i := range 2 {
		l, err := e.b.TryAcquire(ctx, r)
		if err != nil {
			t.Fatalf("acquisition %d of the window: %v", i+2, err)
		}
		mustRelease(t, e.b, l)
	}
	_, err := e.b.TryAcquire(ctx, r)
	le := limitError(t, err, throttle.ReasonRate)
	if le.RetryAfter <= 0 || le.RetryAfter > w.Period+w.Period/throttle.BucketsPerWindow {
		t.Errorf("RetryAfter = %s, want in (0, %s]", le.RetryAfter, w.Period+w.Period/throttle.BucketsPerWindow)
	}
	// The rate refusal took no concurrency slot: a slot-only request on the
	// same key still gets the only slot.
	only, err := e.b.TryAcquire(ctx, throttle.Request{Key: "aon", Concurrency: 1, TTL: 100 * e.u})
	if err != nil {
		t.Fatalf("slot after a rate refusal: %v", err)
	}
	mustRelease(t, e.b, only)
}

func testCooldown(t *testing.T, e *env) {
	ctx := context.Background()
	d := 50 * e.u // wide: the checks below must happen within it, even on a loaded machine
	probe, err := e.b.TryAcquire(ctx, throttle.Request{Key: "cool-probe"})
	if err != nil {
		t.Fatal(err)
	}
	r := throttle.Request{Key: "cool", Concurrency: 1, TTL: 100 * e.u}
	holder := mustAcquire(t, ctx, e.b, r)
	// A waiter queued for the slot that does not wait out cooldowns fails
	// when the cooldown starts.
	queued := make(chan error, 1)
	go func() {
		l, err := e.b.Acquire(ctx, r)
		if err == nil {
			_ = e.b.Release(ctx, l)
		}
		queued <- err
	}()
	e.settle()
	if err := e.b.Cooldown(ctx, "cool", d); err != nil {
		t.Fatal(err)
	}
	limitError(t, <-queued, throttle.ReasonCooldown)
	mustRelease(t, e.b, holder)

	_, err = e.b.TryAcquire(ctx, r)
	if le := limitError(t, err, throttle.ReasonCooldown); le.RetryAfter <= 0 || le.RetryAfter > d {
		t.Errorf("RetryAfter = %s, want in (0, %s]", le.RetryAfter, d)
	}
	_, err = e.b.Acquire(ctx, r)
	limitError(t, err, throttle.ReasonCooldown)

	waiting := r
	waiting.WaitCooldown = true
	short, cancel := context.WithTimeout(ctx, d/2)
	defer cancel()
	_, err = e.b.Acquire(short, waiting)
	limitError(t, err, throttle.ReasonCooldown)

	long, cancel2 := context.WithTimeout(ctx, 100*e.u)
	defer cancel2()
	l := mustAcquire(t, long, e.b, waiting)
	if l.Granted.Before(probe.Granted.Add(d)) {
		t.Errorf("granted at %v, before the cooldown's end (at least %v)", l.Granted, probe.Granted.Add(d))
	}
	mustRelease(t, e.b, l)
}

// testDeadlineFailsFast: a wait known to outlast the deadline fails at once.
func testDeadlineFailsFast(t *testing.T, e *env) {
	r := throttle.Request{Key: "deadline", Windows: []throttle.Window{{Limit: 1, Period: 100 * e.u}}}
	mustAcquire(t, context.Background(), e.b, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*e.u)
	defer cancel()
	start := time.Now()
	_, err := e.b.Acquire(ctx, r)
	if le := limitError(t, err, throttle.ReasonRate); le.RetryAfter <= 10*e.u {
		t.Errorf("RetryAfter = %s, want beyond the deadline (%s)", le.RetryAfter, 10*e.u)
	}
	if e.synthetic && time.Since(start) != 0 {
		t.Errorf("Acquire waited %s before failing", time.Since(start))
	}
}

// testCancelManyWaiters: 300 waiters cancelled at once (while the holders
// release) leave no lease and no goroutine behind.
func testCancelManyWaiters(t *testing.T, e *env) {
	const slots, waiters = 2, 300
	r := throttle.Request{Key: "cancel", Concurrency: slots, TTL: 1000 * e.u}
	var holders []throttle.Lease
	for range slots {
		holders = append(holders, mustAcquire(t, context.Background(), e.b, r))
	}
	base := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, waiters)
	for range waiters {
		go func() {
			l, err := e.b.Acquire(ctx, r)
			if err == nil {
				// Granted before the cancel reached it: a normal holder.
				err = e.b.Release(context.Background(), l)
			}
			errs <- err
		}()
	}
	e.settle()
	var wg sync.WaitGroup
	wg.Go(cancel)
	for _, h := range holders {
		wg.Go(func() { mustRelease(t, e.b, h) })
	}
	wg.Wait()
	for range waiters {
		if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("waiter: %v", err)
		}
	}
	// Every slot is free again.
	var got []throttle.Lease
	for i := range slots {
		l, err := e.b.TryAcquire(context.Background(), r)
		if err != nil {
			t.Fatalf("slot %d after the cancellations: %v (a lease was left behind)", i+1, err)
		}
		got = append(got, l)
	}
	_, err := e.b.TryAcquire(context.Background(), r)
	limitError(t, err, throttle.ReasonConcurrency)
	for _, l := range got {
		mustRelease(t, e.b, l)
	}
	if !e.synthetic { // in a bubble, synctest.Test itself fails on a leaked goroutine
		deadline := time.Now().Add(200 * e.u)
		for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
			time.Sleep(e.u)
		}
		if n := runtime.NumGoroutine(); n > base {
			t.Errorf("%d goroutines after the cancellations, %d before", n, base)
		}
	}
}

func testKeysIndependent(t *testing.T, e *env) {
	ctx := context.Background()
	a := throttle.Request{Key: "ind-a", Concurrency: 1, TTL: 100 * e.u, Windows: []throttle.Window{{Limit: 1, Period: 100 * e.u}}}
	la := mustAcquire(t, ctx, e.b, a)
	if err := e.b.Cooldown(ctx, "ind-c", 100*e.u); err != nil {
		t.Fatal(err)
	}
	b := a
	b.Key = "ind-b"
	lb, err := e.b.TryAcquire(ctx, b)
	if err != nil {
		t.Fatalf("key b limited by key a: %v", err)
	}
	mustRelease(t, e.b, la)
	mustRelease(t, e.b, lb)
}

// testArrivalOrder: waiters on one key are served in arrival order.
func testArrivalOrder(t *testing.T, e *env) {
	const n = 20
	r := throttle.Request{Key: "fifo", Concurrency: 1, TTL: 100 * e.u}
	holder := mustAcquire(t, context.Background(), e.b, r)
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			l, err := e.b.Acquire(context.Background(), r)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			mustRelease(t, e.b, l)
		})
		e.settle() // waiter i is queued before i+1 starts
	}
	mustRelease(t, e.b, holder)
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("served in order %v, want arrival order", order)
		}
	}
}

// testCooldownMixedWaiters: a waiter that does not wait out cooldowns fails
// when one starts, even behind a waiter that does.
func testCooldownMixedWaiters(t *testing.T, e *env) {
	ctx := context.Background()
	r := throttle.Request{Key: "mixed", Concurrency: 1, TTL: 100 * e.u}
	holder := mustAcquire(t, ctx, e.b, r)
	patient := r
	patient.WaitCooldown = true
	got := make(chan error, 2)
	for _, req := range []throttle.Request{patient, r} {
		go func() {
			l, err := e.b.Acquire(ctx, req)
			if err == nil {
				err = e.b.Release(ctx, l)
			}
			got <- err
		}()
		e.settle() // patient queues first
	}
	if err := e.b.Cooldown(ctx, "mixed", 5*e.u); err != nil {
		t.Fatal(err)
	}
	limitError(t, <-got, throttle.ReasonCooldown) // the impatient one, at once
	mustRelease(t, e.b, holder)
	if err := <-got; err != nil {
		t.Errorf("the waiter that waits out cooldowns: %v", err)
	}
}

// cancelRefunds: a grant of weight that races with its waiter's
// cancellation gives back its whole window count as well as its slot.
func cancelRefunds(t *testing.T, e *env, weight int) {
	const waiters = 50
	limit := 5 * weight
	ctx := context.Background()
	r := throttle.Request{Key: "refund", Concurrency: 1, TTL: 1000 * e.u, Weight: weight, Windows: []throttle.Window{{Limit: limit, Period: 1000 * e.u}}}
	holder := mustAcquire(t, ctx, e.b, r)
	var granted atomic.Int64
	var wg sync.WaitGroup
	cancels := make([]context.CancelFunc, waiters)
	for i := range waiters {
		wctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		wg.Go(func() {
			l, err := e.b.Acquire(wctx, r)
			if err == nil {
				granted.Add(1)
				_ = e.b.Release(ctx, l)
			}
		})
	}
	e.settle()
	var race sync.WaitGroup
	race.Go(func() { mustRelease(t, e.b, holder) })
	for _, cancel := range cancels {
		race.Go(cancel)
	}
	race.Wait()
	wg.Wait()
	// The holder took one count; every successful waiter one more; the
	// cancelled grants none.
	one := r
	one.Weight = 1
	left := 0
	for {
		l, err := e.b.TryAcquire(ctx, one)
		if err != nil {
			limitError(t, err, throttle.ReasonRate)
			break
		}
		left++
		mustRelease(t, e.b, l)
	}
	if used := weight * (1 + int(granted.Load())); used+left != limit {
		t.Errorf("%d units counted, %d left of %d: cancelled grants kept their window count", used, left, limit)
	}
}

// testWaiterBehindFailsFast: a waiter that arrives behind a waiting one fails
// at once when its own wait is known to outlast its deadline, or is a
// cooldown it does not wait out, as the first one would.
func testWaiterBehindFailsFast(t *testing.T, e *env) {
	ctx := context.Background()
	r := throttle.Request{Key: "behind", Windows: []throttle.Window{{Limit: 1, Period: 50 * e.u}}}
	mustAcquire(t, ctx, e.b, r)
	long, cancel := context.WithTimeout(ctx, 100*e.u)
	defer cancel()
	first := make(chan error, 1)
	go func() {
		_, err := e.b.Acquire(long, r)
		first <- err
	}()
	e.settle() // the first waiter waits for the window
	short, cancel2 := context.WithTimeout(ctx, 5*e.u)
	defer cancel2()
	start := time.Now()
	_, err := e.b.Acquire(short, r)
	limitError(t, err, throttle.ReasonRate)
	if e.synthetic && time.Since(start) != 0 {
		t.Errorf("the waiter behind waited %s before failing", time.Since(start))
	}
	if err := <-first; err != nil {
		t.Errorf("the first waiter: %v", err)
	}

	long, cancel3 := context.WithTimeout(ctx, 100*e.u) // the window above used half of the first
	defer cancel3()
	c := throttle.Request{Key: "behind-cool", Concurrency: 1, TTL: 100 * e.u}
	if err := e.b.Cooldown(ctx, "behind-cool", 50*e.u); err != nil {
		t.Fatal(err)
	}
	patient := c
	patient.WaitCooldown = true
	done := make(chan error, 1)
	go func() {
		l, err := e.b.Acquire(long, patient)
		if err == nil {
			err = e.b.Release(ctx, l)
		}
		done <- err
	}()
	e.settle()
	start = time.Now()
	_, err = e.b.Acquire(long, c)
	limitError(t, err, throttle.ReasonCooldown)
	if e.synthetic && time.Since(start) != 0 {
		t.Errorf("the impatient waiter behind waited %s before failing", time.Since(start))
	}
	if err := <-done; err != nil {
		t.Errorf("the patient waiter: %v", err)
	}
}

// testWeightCounts: an acquisition counts its weight in every window: with
// 10 units a window, two of weight 4 pass, a third is refused until the
// window opens, and one of weight 2 still fits.
func testWeightCounts(t *testing.T, e *env) {
	ctx := context.Background()
	w := []throttle.Window{{Limit: 10, Period: 1000 * e.u}, {Limit: 100, Period: 2000 * e.u}}
	heavy := throttle.Request{Key: "weight", Windows: w, Weight: 4}
	for range 2 {
		if _, err := e.b.TryAcquire(ctx, heavy); err != nil {
			t.Fatalf("TryAcquire of weight 4: %v", err)
		}
	}
	_, err := e.b.TryAcquire(ctx, heavy)
	if le := limitError(t, err, throttle.ReasonRate); le.RetryAfter <= 0 {
		t.Errorf("RetryAfter = %s, want the window's opening", le.RetryAfter)
	}
	light := heavy
	light.Weight = 2
	if _, err := e.b.TryAcquire(ctx, light); err != nil {
		t.Fatalf("weight 2 into the 2 units left: %v", err)
	}
	light.Weight = 0 // one unit
	_, err = e.b.TryAcquire(ctx, light)
	limitError(t, err, throttle.ReasonRate)
}

// testWeightsNeverExceed: goroutines acquiring weights 1 to 4 at once never
// put more units in a window than its limit.
func testWeightsNeverExceed(t *testing.T, e *env) {
	const limit = 20
	period := 10 * e.u
	ctx, cancel := context.WithTimeout(context.Background(), 40*e.u)
	defer cancel()
	type grant struct {
		at    time.Time
		units int
	}
	var mu sync.Mutex
	var grants []grant
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			r := throttle.Request{Key: "weights", Windows: []throttle.Window{{Limit: limit, Period: period}}, Weight: 1 + i%4}
			for ctx.Err() == nil {
				l, err := e.b.Acquire(ctx, r)
				if err != nil {
					return
				}
				mu.Lock()
				grants = append(grants, grant{l.Granted, r.Weight})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(grants) == 0 {
		t.Fatal("nothing granted")
	}
	slices.SortFunc(grants, func(a, b grant) int { return a.at.Compare(b.at) })
	lo, sum, worst := 0, 0, 0
	for _, g := range grants {
		sum += g.units
		for !grants[lo].at.After(g.at.Add(-period)) {
			sum -= grants[lo].units
			lo++
		}
		worst = max(worst, sum)
	}
	if worst > limit {
		t.Errorf("%d units in one window of %s, limit %d", worst, period, limit)
	}
	t.Logf("%d grants, at most %d units in a window of limit %d", len(grants), worst, limit)
}
