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
	// Parallel runs the suite's tests side by side (t.Parallel), each on a
	// backend of its own from New. Most of a real-time run is waiting, so
	// it then takes about its longest test's time instead of the sum; the
	// load it adds falls on the package's other tests, so leave it off where
	// those are sensitive to load (a Redis killed under load, say).
	Parallel bool
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
		{"ExtendShortens", testExtendShortens},
		{"RateWindowsNeverExceeded", func(t *testing.T, e *env) {
			testRateWindows(t, e, []throttle.Window{{Limit: 20, Period: 10 * e.u}, {Limit: 50, Period: 40 * e.u}}, 160*e.u)
		}},
		{"RateWindowsThroughput", testRateThroughput},
		{"AllOrNothing", testAllOrNothing},
		{"Cooldown", testCooldown},
		{"CooldownOutlastsHolder", testCooldownOutlastsHolder},
		{"DeadlineFailsFast", testDeadlineFailsFast},
		{"CancelManyWaiters", testCancelManyWaiters},
		{"KeysIndependent", testKeysIndependent},
		{"CooldownFailsNonWaitingBehindWaiting", testCooldownMixedWaiters},
		{"CancelledGrantsRefundWindow", func(t *testing.T, e *env) { cancelRefunds(t, e, 1) }},
		{"WaiterBehindFailsFast", testWaiterBehindFailsFast},
		{"WaitersBehindFailOnWindow", testWaitersBehindFailOnWindow},
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
		{"WithApartRenews", testWithApartRenews},
		{"SamePeriodWindows", testSamePeriodWindows},
		{"StallTold", testStallTold},
		{"MembersInvalid", testMembersInvalid},
		{"MembersAllOrNothing", testMembersAllOrNothing},
		{"MembersWait", testMembersWait},
		{"MembersCancel", testMembersCancel},
		{"MembersMany", testMembersMany},
		{"MembersCooldown", testMembersCooldown},
		{"MembersOthersGoOn", testMembersOthersGoOn},
	}
	// Tests that wait out many periods of a window and check only counts of
	// Lease.Granted, which load cannot bend, run beside each other (after the
	// others) even when h.Parallel is off: a second and a half each on real
	// time.
	countsOnly := map[string]bool{"RateWindowsNeverExceeded": true, "RateWindowsThroughput": true}
	if h.FIFO {
		tests = append(tests, struct {
			name string
			fn   func(*testing.T, *env)
		}{"ArrivalOrder", testArrivalOrder})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if h.Parallel || countsOnly[tc.name] {
				t.Parallel()
			}
			if h.Synctest {
				synctest.Test(t, func(t *testing.T) {
					tc.fn(t, &env{b: h.New(t), u: time.Second, synthetic: true})
				})
				return
			}
			tc.fn(t, &env{b: h.New(t), u: 10 * time.Millisecond})
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
