// The go-redis client as the redisConn the backend runs on.

package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// goRedis is a go-redis client as a redisConn.
type goRedis struct {
	client goredis.UniversalClient
}

// EvalSha implements redisConn.
func (c goRedis) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) (any, error) {
	return c.client.EvalSha(ctx, sha1, keys, args...).Result()
}

// Eval implements redisConn.
func (c goRedis) Eval(ctx context.Context, src string, keys []string, args ...any) (any, error) {
	return c.client.Eval(ctx, src, keys, args...).Result()
}

// SetNX implements redisConn.
func (c goRedis) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return c.client.SetNX(ctx, key, value, ttl).Result()
}

// Ping implements redisConn.
func (c goRedis) Ping(ctx context.Context) error {
	return c.client.Ping(ctx).Err()
}

// Subscribe implements redisConn: a PubSub made without a channel
// (no round trip), then subscribed to channels under ctx.
func (c goRedis) Subscribe(ctx context.Context, channels ...string) (subscription, error) {
	ps := c.client.Subscribe(context.Background())
	if err := ps.Subscribe(ctx, channels...); err != nil {
		_ = ps.Close()
		return nil, err
	}
	return pubSub{ps}, nil
}

// pubSub is a go-redis PubSub as a subscription, with its own Close.
type pubSub struct{ *goredis.PubSub }

// Receive implements subscription: a *goredis.Message's channel and payload,
// nothing for any other reply.
func (p pubSub) Receive(ctx context.Context, timeout time.Duration) (channel, payload string, err error) {
	msg, err := p.ReceiveTimeout(ctx, timeout)
	if m, ok := msg.(*goredis.Message); ok && err == nil {
		return m.Channel, m.Payload, nil
	}
	return "", "", err
}

// Ping implements subscription.
func (p pubSub) Ping(ctx context.Context) error { return p.PubSub.Ping(ctx) }
