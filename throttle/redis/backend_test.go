package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
	"github.com/wecomkit/wecom/throttle/throttletest"
)

func newRedisBackend(t *testing.T, rdb redis.UniversalClient, opt throttleredis.Options) *throttleredis.Backend {
	t.Helper()
	opt.Prefix = redistest.Prefix(t, rdb)
	b, err := throttleredis.New(rdb, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestRedisConformance(t *testing.T) {
	t.Parallel() // real time, mostly waiting: the three real-time runs go side by side
	rdb := redistest.Single(t)
	throttletest.Run(t, throttletest.Harness{
		New: func(t *testing.T) throttle.Backend { return newRedisBackend(t, rdb, throttleredis.Options{}) },
	})
}

func TestRedisClusterConformance(t *testing.T) {
	t.Parallel() // real time, mostly waiting: the three real-time runs go side by side
	rdb := redistest.Cluster(t)
	throttletest.Run(t, throttletest.Harness{
		New: func(t *testing.T) throttle.Backend { return newRedisBackend(t, rdb, throttleredis.Options{}) },
	})
}

// Keys that would share a hash tag spelling ("x" and "{x}") keep their own
// limits.
func TestRedisKeysNeverShareLimits(t *testing.T) {
	t.Parallel()
	rdb := redistest.Single(t)
	b := newRedisBackend(t, rdb, throttleredis.Options{})
	ctx := context.Background()
	for _, key := range []string{"x", "{x}", "{x}/y", "y{x}"} {
		if _, err := b.TryAcquire(ctx, throttle.Request{Key: key, Concurrency: 1}); err != nil {
			t.Errorf("key %q limited by another key: %v", key, err)
		}
	}
	if _, err := throttleredis.New(rdb, throttleredis.Options{Prefix: "a{b}:"}); !errors.Is(err, throttle.ErrInvalidRequest) {
		t.Errorf("New with a brace in the prefix = %v, want ErrInvalidRequest", err)
	}
}

// A period that is not a whole tenth of a second has more than 100 buckets of
// whole milliseconds: none may be forgotten while it is in the window.
func TestRedisOddPeriodsHold(t *testing.T) {
	t.Parallel() // keys of its own
	rdb := redistest.Single(t)
	b := newRedisBackend(t, rdb, throttleredis.Options{})
	ctx := context.Background()
	for _, period := range []time.Duration{150 * time.Millisecond, 250 * time.Millisecond, 1990 * time.Millisecond} {
		r := throttle.Request{Key: "odd-" + period.String(), Windows: []throttle.Window{{Limit: 10, Period: period}}}
		first, err := b.TryAcquire(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		for range 9 {
			if _, err := b.TryAcquire(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(period * 3 / 4)
		if l, err := b.TryAcquire(ctx, r); err == nil && l.Granted.Sub(first.Granted) < period {
			t.Errorf("period %s: an 11th acquisition %s after the first", period, l.Granted.Sub(first.Granted))
		}
	}
}
