package redis

import (
	"github.com/redis/go-redis/v9"
)

// newRedis is newBackend on a go-redis client, as throttle/redis's New makes
// it (which the tests of this package cannot import).
func newRedis(rdb redis.UniversalClient, opt Options) (*Backend, error) {
	return newBackend(goRedis{client: rdb}, opt)
}

// client returns the go-redis client under b, for the tests that look at
// Redis directly.
func client(b *Backend) redis.UniversalClient { return b.rdb.(goRedis).client }
