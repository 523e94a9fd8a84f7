package throttle_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/throttle"
	"github.com/wecomkit/wecom/throttle/throttletest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	throttletest.Run(t, throttletest.Harness{
		New:      func(*testing.T) throttle.Backend { return throttle.NewMemory() },
		Synctest: true,
		FIFO:     true,
	})
}

// The suite also passes on real time, as a shared backend must.
func TestMemoryConformanceRealTime(t *testing.T) {
	t.Parallel() // real time, mostly waiting: the three real-time runs go side by side
	if testing.Short() {
		t.Skip("real-time conformance run skipped in -short mode")
	}
	throttletest.Run(t, throttletest.Harness{
		New:      func(*testing.T) throttle.Backend { return throttle.NewMemory() },
		Parallel: true,
	})
}

func BenchmarkMemoryAcquireRelease(b *testing.B) {
	m := throttle.NewMemory()
	ctx := context.Background()
	r := throttle.Request{
		Key:         "corp/cgi-bin/externalcontact/mark_tag",
		Concurrency: 1 << 30,
		Windows:     []throttle.Window{{Limit: 1 << 40, Period: 60e9}, {Limit: 1 << 40, Period: 3600e9}},
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l, err := m.Acquire(ctx, r)
			if err != nil {
				b.Fatal(err)
			}
			if err := m.Release(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A lease whose expiry is moved earlier (the hold of an abandoned call) wakes
// its waiters at the new expiry, not at the old one.
func TestMemoryShortenedLeaseWakesWaiter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := throttle.NewMemory()
		ctx := context.Background()
		r := throttle.Request{Key: "k", Concurrency: 1, TTL: time.Hour}
		holder, err := m.Acquire(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			if _, err := m.Acquire(ctx, r); err != nil {
				t.Error(err)
			}
			got <- time.Now()
		}()
		synctest.Wait()
		start := time.Now()
		if _, err := m.Extend(ctx, holder, time.Second); err != nil {
			t.Fatal(err)
		}
		if d := (<-got).Sub(start); d != time.Second {
			t.Errorf("waiter served %v after the lease was shortened to 1s, want 1s", d)
		}
	})
}
