package throttle_test

import (
	"context"
	"testing"

	"github.com/wecomkit/wecom/throttle"
	"github.com/wecomkit/wecom/throttle/throttletest"
)

func TestMemoryConformance(t *testing.T) {
	throttletest.Run(t, throttletest.Harness{
		New:      func(*testing.T) throttle.Backend { return throttle.NewMemory() },
		Synctest: true,
		FIFO:     true,
	})
}

// The suite also passes on real time, as a shared backend must.
func TestMemoryConformanceRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time conformance run skipped in -short mode")
	}
	throttletest.Run(t, throttletest.Harness{
		New: func(*testing.T) throttle.Backend { return throttle.NewMemory() },
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
