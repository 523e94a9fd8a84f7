package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/throttle"
)

const envCluster = "REDIS_CLUSTER_ADDRS"

// TestCorpsScale: many corps, each at a low rate, on a Redis Cluster: the
// Redis CPU per call (the usec of EVAL and EVALSHA in INFO commandstats,
// summed over the masters) and the Redis memory each corp leaves once its
// calls are done (MEMORY USAGE of every key under the prefix), as the
// number of corps grows. Each
// corp makes calls acquire+release pairs on its mark_tag key with the SDK's
// limits, by workers goroutines of one backend; other clients of the same
// cluster would add to the figures.
//
//	REDIS_CLUSTER_ADDRS=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 go test -run TestCorpsScale -v -count=1 .
func TestCorpsScale(t *testing.T) {
	addrs := os.Getenv(envCluster)
	if addrs == "" {
		t.Skip(envCluster + " is unset: this test measures a Redis Cluster")
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	t.Cleanup(func() { _ = rdb.Close() })
	const calls, workers = 5, 32
	for _, corps := range []int{10, 100, 1000, 3000} {
		prefix := fmt.Sprintf("wecombench:scale:%d:%d:", time.Now().UnixNano(), corps)
		t.Cleanup(func() { deleteOnMasters(t, rdb, prefix) })
		lim := newLimiter(t, rdb, prefix)
		ctx := context.Background()
		cpu0 := clusterCPU(t, rdb)
		start := time.Now()
		jobs := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for c := range jobs {
					r := throttle.Request{Key: fmt.Sprintf("{wwcorp%05d}/cgi-bin/externalcontact/mark_tag", c), Concurrency: 5, TTL: sdkTTL, Windows: sdkWindows}
					l, err := lim.Acquire(ctx, r)
					if err != nil {
						t.Error(err)
						continue
					}
					if err := lim.Release(ctx, l); err != nil {
						t.Error(err)
					}
				}
			})
		}
		for range calls {
			for c := range corps {
				jobs <- c
			}
		}
		close(jobs)
		wg.Wait()
		elapsed := time.Since(start)
		cpu1 := clusterCPU(t, rdb)
		keys, bytes := keysUnder(t, rdb, prefix)
		n := corps * calls
		t.Logf("%5d corps x %d calls: %6.1f us of Redis CPU per call, %.1f keys and %.0f bytes per corp left after, %.0f calls/s",
			corps, calls, float64(cpu1-cpu0)/float64(n), float64(keys)/float64(corps), float64(bytes)/float64(corps), float64(n)/elapsed.Seconds())
	}
}

// deleteOnMasters deletes every key under prefix on every master.
func deleteOnMasters(t *testing.T, rdb *redis.ClusterClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		it := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for it.Next(ctx) {
			if err := n.Del(ctx, it.Val()).Err(); err != nil {
				return err
			}
		}
		return it.Err()
	})
	if err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

// clusterCPU returns the usec the masters spent in EVAL and EVALSHA.
func clusterCPU(t *testing.T, rdb *redis.ClusterClient) (usec int64) {
	t.Helper()
	var mu sync.Mutex
	err := rdb.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		cs, err := n.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, line := range strings.Split(cs, "\n") {
			if strings.HasPrefix(line, "cmdstat_eval:") || strings.HasPrefix(line, "cmdstat_evalsha:") {
				usec += infoField(line, "usec=")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return usec
}

// keysUnder returns how many keys are under prefix on the masters and the
// sum of their MEMORY USAGE.
func keysUnder(t *testing.T, rdb *redis.ClusterClient, prefix string) (keys, bytes int64) {
	t.Helper()
	var mu sync.Mutex
	err := rdb.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		it := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for it.Next(ctx) {
			b, err := n.MemoryUsage(ctx, it.Val(), 0).Result()
			if err != nil && err != redis.Nil {
				return err
			}
			mu.Lock()
			keys, bytes = keys+1, bytes+b
			mu.Unlock()
		}
		return it.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, bytes
}

// infoField reads the integer after name in an INFO line ("usec=123,").
func infoField(line, name string) int64 {
	i := strings.Index(line, name)
	if i < 0 {
		return 0
	}
	v := line[i+len(name):]
	if j := strings.IndexAny(v, ",\r"); j >= 0 {
		v = v[:j]
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}
