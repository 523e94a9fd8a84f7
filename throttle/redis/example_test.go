package redis_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// At most 5 holders of a key among every process using one Redis, each
// process with a third of the limits while Redis is down (compiled, not
// run: it needs a Redis server).
func ExampleNew() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	lim, err := throttleredis.New(rdb, throttleredis.Options{
		Prefix:     "myapp:throttle:",
		Fallback:   throttleredis.FallBackLocal, // keep going if Redis is down...
		LocalShare: 1.0 / 3,                     // ...each of 3 processes with a third of every limit
	})
	if err != nil {
		log.Fatal(err)
	}
	defer lim.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := lim.Acquire(ctx, throttle.Request{Key: "{corp}/cgi-bin/externalcontact/mark_tag", Concurrency: 5})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = lim.Release(ctx, l) }()
}
