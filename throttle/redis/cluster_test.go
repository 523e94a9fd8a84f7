package redis

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
)

// TestRedisClusterYieldServesOnce: on a Cluster, a Release that yields its
// slot to a process that has waited longer never serves its own waiter
// too: one call holds the slot at a time, whichever node each process
// listens on. (A script's PUBLISH counts only the listeners on its own
// node, and the message still reaches the others; a script that took a
// count of 0 for "gone" served its own waiter with the lease it had
// published.) Six hash tags, so that keys and subscriptions fall on
// different nodes.
func TestRedisClusterYieldServesOnce(t *testing.T) {
	t.Parallel() // keys of its own
	rdb := redistest.Cluster(t)
	prefix := redistest.Prefix(t, rdb)
	a, b := clusterBackend(t, rdb, prefix), clusterBackend(t, rdb, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 6 {
		key := fmt.Sprintf("{yield%d}/api", i)
		r := throttle.Request{Key: key, Concurrency: 1, TTL: time.Minute}
		h := mustTake(t, a, r)
		bw := acquireAsync(ctx, b, r) // b waits first
		headRefused(t, b, key)
		aw := acquireAsync(ctx, a, r)
		headRefused(t, a, key)
		if err := a.Release(ctx, h); err != nil {
			t.Fatal(err)
		}
		first, second, by, other := servedFirst(t, aw, bw, a, b)
		select {
		case got := <-second:
			t.Fatalf("%s: both served at once: %+v and %+v", key, first.l, got.l)
		case <-time.After(300 * time.Millisecond):
		}
		if err := by.Release(ctx, first.l); err != nil {
			t.Fatal(err)
		}
		got := <-second
		if got.err != nil {
			t.Fatal(got.err)
		}
		if err := other.Release(ctx, got.l); err != nil {
			t.Fatal(err)
		}
	}
}

// servedFirst returns the first of two waiters (of a and of b) to be
// served, the other's channel, and the backends of each.
func servedFirst(t *testing.T, aw, bw <-chan acquired, a, b *Backend) (first acquired, second <-chan acquired, by, other *Backend) {
	t.Helper()
	select {
	case first = <-aw:
		second, by, other = bw, a, b
	case first = <-bw:
		second, by, other = aw, b, a
	}
	if first.err != nil {
		t.Fatal(first.err)
	}
	return first, second, by, other
}

// clusterBackend returns a backend on the Cluster rdb under prefix, once
// its subscription is up on some node.
func clusterBackend(t *testing.T, rdb redis.UniversalClient, prefix string) *Backend {
	t.Helper()
	b, err := newRedis(rdb, Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ch := b.wakePrefix + b.proc
	for range 5000 {
		var n atomic.Int64
		err := rdb.(*redis.ClusterClient).ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
			m, err := c.PubSubNumSub(ctx, ch).Result()
			n.Add(m[ch])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n.Load() > 0 {
			return b
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the backend never subscribed")
	return nil
}

// TestRedisProcessesNeverOverLimit: three processes, eight goroutines each,
// on one key with two slots and a lock per customer (four customers): at no
// moment do more than two calls hold the key, or two calls one customer,
// on a single node and on a Cluster, through hand-overs, grants and
// wake-ups across processes.
func TestRedisProcessesNeverOverLimit(t *testing.T) {
	t.Parallel() // keys of its own
	for _, tc := range []struct {
		name string
		rdb  func(testing.TB) redis.UniversalClient
	}{{"Single", redistest.Single}, {"Cluster", redistest.Cluster}} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := tc.rdb(t)
			prefix := redistest.Prefix(t, rdb)
			var bs []*Backend
			for range 3 {
				b, err := newRedis(rdb, Options{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Close() })
				bs = append(bs, b)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var api atomic.Int64
			locks := make([]atomic.Int64, 4)
			errs := make(chan error, 24)
			for g := range 24 {
				go func() { errs <- holdInTurn(ctx, bs[g%3], g, &api, locks) }()
			}
			for range 24 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// holdInTurn is one goroutine of TestRedisProcessesNeverOverLimit: 20
// calls on b, each checking the counts it holds.
func holdInTurn(ctx context.Context, b *Backend, g int, api *atomic.Int64, locks []atomic.Int64) error {
	for i := range 20 {
		c := (g + i) % len(locks)
		r := throttle.Request{Key: "{race}/api", Concurrency: 2, TTL: time.Minute,
			With: []throttle.Request{{Key: fmt.Sprintf("{race}@customer|%d", c), Concurrency: 1, TTL: time.Minute}}}
		l, err := b.Acquire(ctx, r)
		if err != nil {
			return err
		}
		n, m := api.Add(1), locks[c].Add(1)
		time.Sleep(time.Millisecond)
		api.Add(-1)
		locks[c].Add(-1)
		if err := b.Release(ctx, l); err != nil {
			return err
		}
		if n > 2 || m > 1 {
			return fmt.Errorf("%d calls held the key, %d customer %d", n, m, c)
		}
	}
	return nil
}
