package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
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

// TestRedisLearnedLimitCapsEveryProcess: a limit one process stored for a
// key (its Learner, after WeCom refused calls in flight) caps every
// process's acquisitions of the key in the script that takes them, before
// any other has read it: a process asking for 5 gets 2.
func TestRedisLearnedLimitCapsEveryProcess(t *testing.T) {
	t.Parallel()
	rdb := redistest.Single(t)
	prefix := redistest.Prefix(t, rdb)
	learner, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = learner.Close() })
	joining, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = joining.Close() })
	ctx := context.Background()
	const key = "{wwcap}/cgi-bin/externalcontact/mark_tag"
	if _, ok, err := learner.SwapLimit(ctx, key, throttle.Learned{}, 2); err != nil || !ok {
		t.Fatalf("SwapLimit = %v, %v", ok, err)
	}
	r := throttle.Request{Key: key, Concurrency: 5, TTL: time.Minute}
	for i := range 2 {
		if _, err := joining.TryAcquire(ctx, r); err != nil {
			t.Fatalf("acquisition %d of the learned 2: %v", i+1, err)
		}
	}
	var le *throttle.LimitError
	if l, err := joining.TryAcquire(ctx, r); !errors.As(err, &le) || le.Reason != throttle.ReasonConcurrency {
		t.Errorf("a third acquisition under the learned 2: %+v, %v; want refused for concurrency", l, err)
	}
}
