package throttle_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	"github.com/wecomkit/wecom/throttle/throttletest"
)

func newRedisBackend(t *testing.T, rdb redis.UniversalClient, opt throttle.RedisOptions) *throttle.Redis {
	t.Helper()
	opt.Prefix = redistest.Prefix(t, rdb)
	b, err := throttle.NewRedis(rdb, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestRedisConformance(t *testing.T) {
	rdb := redistest.Single(t)
	throttletest.Run(t, throttletest.Harness{
		New: func(t *testing.T) throttle.Backend { return newRedisBackend(t, rdb, throttle.RedisOptions{}) },
	})
}

func TestRedisClusterConformance(t *testing.T) {
	rdb := redistest.Cluster(t)
	throttletest.Run(t, throttletest.Harness{
		New: func(t *testing.T) throttle.Backend { return newRedisBackend(t, rdb, throttle.RedisOptions{}) },
	})
}
