package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// TestFallbackLeaseReportsTheFleetCap: while Redis is down, a lease of the
// local fallback is counted against this process's share, but reports the
// fleet's cap: a 45033 to its call must not teach the fleet the share.
func TestFallbackLeaseReportsTheFleetCap(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: refusedAddr(t), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	b, err := throttleredis.New(rdb, throttleredis.Options{Fallback: throttleredis.FallBackLocal, LocalShare: 1.0 / 3, OpTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	l, err := b.TryAcquire(context.Background(), throttle.Request{Key: "k", Concurrency: 5, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if l.Concurrency != 5 || !strings.HasPrefix(l.ID, "local:") {
		t.Errorf("fallback lease %+v: want the fleet's cap 5", l)
	}
}
