package redistest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// With no Redis configured, Main starts a node and a 3-master cluster for
// the tests, names them in the environment, and stops them afterwards.
func TestMainStartsPrivateRedis(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		unavailable(t, "redis-server not on PATH", "install it to test Main")
	}
	t.Setenv(EnvAddr, "")
	t.Setenv(EnvClusterAddrs, "")
	var single, cluster string
	var notice bytes.Buffer
	code := mainWith(func() int {
		single, cluster = os.Getenv(EnvAddr), os.Getenv(EnvClusterAddrs)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rdb := redis.NewClient(&redis.Options{Addr: single})
		defer rdb.Close()
		if err := rdb.Ping(ctx).Err(); err != nil {
			t.Errorf("the private node at %q: %v", single, err)
		}
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(cluster, ",")})
		defer cc.Close()
		var masters atomic.Int64
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			masters.Add(1)
			return c.Ping(ctx).Err()
		})
		if err != nil || masters.Load() != 3 {
			t.Errorf("the private cluster at %q: %d masters, %v", cluster, masters.Load(), err)
		}
		return 7
	}, &notice)
	if code != 7 {
		t.Errorf("mainWith returned %d, want the run's 7", code)
	}
	if notice.Len() != 0 {
		t.Errorf("notice %q, want none", notice.String())
	}
	rdb := redis.NewClient(&redis.Options{Addr: single, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err == nil {
		t.Errorf("the private node at %s still answers after Main", single)
	}
}

// Without redis-server, Main says once, even without -v, that the Redis
// tests skip, and still runs the tests.
func TestMainWithoutRedisServer(t *testing.T) {
	t.Setenv(EnvAddr, "")
	t.Setenv(EnvClusterAddrs, "")
	t.Setenv("PATH", t.TempDir())
	var notice bytes.Buffer
	ran := false
	if code := mainWith(func() int { ran = true; return 0 }, &notice); code != 0 || !ran {
		t.Errorf("code %d, ran %t", code, ran)
	}
	if got := notice.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "skip") {
		t.Errorf("notice %q, want one line saying the Redis tests skip", got)
	}
}
