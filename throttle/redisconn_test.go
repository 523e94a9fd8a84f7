package throttle

import (
	"github.com/redis/go-redis/v9"
	"github.com/wecomkit/wecom/throttle/internal/redisconn"
)

// newRedis is NewRedis on a go-redis client, as throttle/redis's New makes
// it (which the tests of this package cannot import).
func newRedis(rdb redis.UniversalClient, opt RedisOptions) (*Redis, error) {
	return NewRedis(redisconn.Conn{Client: rdb}, opt)
}

// client returns the go-redis client under b, for the tests that look at
// Redis directly.
func client(b *Redis) redis.UniversalClient { return b.rdb.(redisconn.Conn).Client }
