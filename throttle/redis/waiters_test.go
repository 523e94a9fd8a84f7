package redis_test

// Mass cancellation on a real Redis: a thousand waiters cancelled at once
// leave no lease, no window count and no goroutine behind.

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// TestRedisThousandWaitersCancelled: 1000 waiters on a full key, cancelled at
// once while the two holders release, leave no lease, no window count and no
// goroutine behind.
func TestRedisThousandWaitersCancelled(t *testing.T) { // not parallel: it counts the process's goroutines
	const slots, waiters, limit = 2, 1000, 1100
	rdb := redistest.Single(t)
	b, _ := robustBackend(t, rdb, throttleredis.Options{})
	ctx := context.Background()
	windows := []throttle.Window{{Limit: limit, Period: 10 * time.Minute}}
	r := throttle.Request{Key: "{corp}/cancel", Concurrency: slots, TTL: 10 * time.Minute, Windows: windows}
	holders := takeCancelHolders(t, b, r, slots)
	// The backend's own goroutines included; the first probe, which may
	// still be finishing, is the one that may leave meanwhile.
	base := runtime.NumGoroutine()

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var granted, started atomic.Int64
	errs := startCancelWaiters(wctx, b, r, waiters, &granted, &started)
	waitCancelWaitersQueued(t, errs, &started, waiters)
	cancelWhileReleasing(t, b, cancel, holders)
	cancelled := collectCancelledWaiters(t, errs, waiters)
	t.Logf("%d waiters granted before the cancellation reached them, %d cancelled", granted.Load(), cancelled)

	checkCancelSlotsFree(t, b, r, slots)

	// The window counted the holders, the granted waiters and the two
	// leases just taken, and nothing for the cancelled waiters.
	count := throttle.Request{Key: r.Key, Windows: windows} // no slot: counts only
	used := slots + int(granted.Load()) + slots
	if left := countWindowLeft(t, b, count, limit, used); used+left != limit {
		t.Errorf("window: %d acquisitions made, %d left of %d: %d counts were left behind by cancelled waiters",
			used, left, limit, limit-used-left)
	}

	if !robustEventually(10*time.Second, func() bool { return runtime.NumGoroutine() <= base }) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines after the cancellations, %d before:\n%s", runtime.NumGoroutine(), base, buf)
	}
}

// takeCancelHolders takes all slots of r, one lease each.
func takeCancelHolders(t *testing.T, b *throttleredis.Backend, r throttle.Request, slots int) []throttle.Lease {
	t.Helper()
	var holders []throttle.Lease
	for range slots {
		l, err := b.TryAcquire(context.Background(), r)
		if err != nil {
			t.Fatalf("holder: %v", err)
		}
		holders = append(holders, l)
	}
	return holders
}

// startCancelWaiters starts n waiters for r on wctx; each sends its outcome
// to the channel returned, releasing first a lease it was granted, counted
// in granted.
func startCancelWaiters(wctx context.Context, b *throttleredis.Backend, r throttle.Request, n int, granted, started *atomic.Int64) <-chan error {
	errs := make(chan error, n)
	for range n {
		go func() {
			started.Add(1)
			l, err := b.Acquire(wctx, r)
			if err == nil {
				// Granted before the cancellation reached it: an ordinary
				// holder, which counts in the window.
				granted.Add(1)
				err = b.Release(context.Background(), l)
			}
			errs <- err
		}()
	}
	return errs
}

// waitCancelWaitersQueued lets the waiters queue: all running, then a
// moment to reach their wait; none may have returned. (It counts the
// waiters that ran, not the process's goroutines, which goroutines left by
// earlier tests leave meanwhile.)
func waitCancelWaitersQueued(t *testing.T, errs <-chan error, started *atomic.Int64, waiters int) {
	t.Helper()
	if !robustEventually(30*time.Second, func() bool { return started.Load() == int64(waiters) }) {
		t.Fatalf("only %d of %d waiters ran", started.Load(), waiters)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(errs); n != 0 {
		t.Fatalf("%d waiters returned while both slots were held", n)
	}
}

// cancelWhileReleasing cancels the waiters while the holders release, all
// at once.
func cancelWhileReleasing(t *testing.T, b *throttleredis.Backend, cancel context.CancelFunc, holders []throttle.Lease) {
	t.Helper()
	var race sync.WaitGroup
	race.Go(cancel)
	for _, h := range holders {
		race.Go(func() {
			if err := b.Release(context.Background(), h); err != nil {
				t.Errorf("Release(holder): %v", err)
			}
		})
	}
	race.Wait()
}

// collectCancelledWaiters waits, bounded, for every waiter's outcome: nil or
// context.Canceled. It returns how many were cancelled.
func collectCancelledWaiters(t *testing.T, errs <-chan error, waiters int) int {
	t.Helper()
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
	var cancelled int
	for i := range waiters {
		select {
		case err := <-errs:
			switch {
			case err == nil:
			case errors.Is(err, context.Canceled):
				cancelled++
			default:
				t.Errorf("waiter: %v, want nil or context.Canceled", err)
			}
		case <-timeout.C:
			t.Fatalf("%d of %d waiters still blocked after the cancellation", waiters-i, waiters)
		}
	}
	return cancelled
}

// checkCancelSlotsFree checks that exactly the slots of r are free, and
// frees them again.
func checkCancelSlotsFree(t *testing.T, b *throttleredis.Backend, r throttle.Request, slots int) {
	t.Helper()
	ctx := context.Background()
	var again []throttle.Lease
	for i := range slots {
		l, err := b.TryAcquire(ctx, r)
		if err != nil {
			t.Fatalf("slot %d after the cancellations: %v (a lease was left behind)", i+1, err)
		}
		again = append(again, l)
	}
	_, err := b.TryAcquire(ctx, r)
	robustWantLimit(t, err, throttle.ReasonConcurrency)
	for _, l := range again {
		if err := b.Release(ctx, l); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
}

// countWindowLeft takes what is left in the window of count (a request
// without a slot), up to limit+1 tries, and returns how many it got; used
// were taken before.
func countWindowLeft(t *testing.T, b *throttleredis.Backend, count throttle.Request, limit, used int) int {
	t.Helper()
	left := 0
	// Units taken ahead for waiters (blocks) come back when unused: drain
	// again until the window is full, or for two seconds.
	for give := time.Now().Add(2 * time.Second); used+left < limit && time.Now().Before(give); time.Sleep(20 * time.Millisecond) {
		for ; left <= limit; left++ {
			if _, err := b.TryAcquire(context.Background(), count); err != nil {
				robustWantLimit(t, err, throttle.ReasonRate)
				break
			}
		}
	}
	return left
}
