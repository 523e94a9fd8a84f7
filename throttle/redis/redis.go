// Package redis runs throttle's Redis backend (throttle.Redis) on a
// go-redis client. It is a package of its own so that a program that uses
// only the in-process limiter (throttle.NewMemory) does not link go-redis.
// Programs that also import go-redis name it apart:
//
//	import throttleredis "github.com/wecomkit/wecom/throttle/redis"
//
// The backend prints nothing. go-redis itself logs failed dials ("failed to
// dial after 5 attempts") through its package-wide logger; a program that
// wants them quiet sets its own once, before using Redis:
//
//	type quiet struct{}
//	func (quiet) Printf(context.Context, string, ...any) {}
//	...
//	redis.SetLogger(quiet{})
package redis

import (
	goredis "github.com/redis/go-redis/v9"
	"github.com/wecomkit/wecom/throttle"
	"github.com/wecomkit/wecom/throttle/internal/redisconn"
)

// New returns a throttle.Redis backend on rdb (a single node, Sentinel or
// Cluster client); see throttle.Redis for what it does and
// throttle.RedisOptions for its options. It does not dial: the backend
// probes Redis in the background, and Close stops it.
func New(rdb goredis.UniversalClient, opt throttle.RedisOptions) (*throttle.Redis, error) {
	var conn throttle.RedisConn
	if rdb != nil {
		conn = redisconn.Conn{Client: rdb}
	}
	return throttle.NewRedis(conn, opt)
}
