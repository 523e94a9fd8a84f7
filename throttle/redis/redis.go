// Package redis is throttle's Redis backend: a throttle.Backend on a
// go-redis client, shared by every process that uses the same Redis. It is
// a package of its own so that a program that uses only the in-process
// limiter (throttle.NewMemory) links no Redis code.
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
)

// New returns a Redis backend on rdb (a single node, Sentinel or Cluster
// client); see Backend for what it does and Options for its options. It does not dial: the backend
// probes Redis in the background, and Close stops it.
func New(rdb goredis.UniversalClient, opt Options) (*Backend, error) {
	var conn redisConn
	if rdb != nil {
		conn = goRedis{client: rdb}
	}
	return newBackend(conn, opt)
}
