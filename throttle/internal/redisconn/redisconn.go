// Package redisconn adapts a go-redis client to throttle.RedisConn. It does
// not import throttle, so that the tests inside throttle can use it as
// throttle/redis's New does.
package redisconn

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Conn is a go-redis client as a throttle.RedisConn.
type Conn struct {
	Client redis.UniversalClient
}

// EvalSha implements throttle.RedisConn.
func (c Conn) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) (any, error) {
	return c.Client.EvalSha(ctx, sha1, keys, args...).Result()
}

// Eval implements throttle.RedisConn.
func (c Conn) Eval(ctx context.Context, src string, keys []string, args ...any) (any, error) {
	return c.Client.Eval(ctx, src, keys, args...).Result()
}

// SetNX implements throttle.RedisConn.
func (c Conn) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return c.Client.SetNX(ctx, key, value, ttl).Result()
}

// Ping implements throttle.RedisConn.
func (c Conn) Ping(ctx context.Context) error {
	return c.Client.Ping(ctx).Err()
}

// Subscription is throttle.RedisSubscription (the same interface literal).
type Subscription = interface {
	Receive(ctx context.Context, timeout time.Duration) (channel, payload string, err error)
	Ping(ctx context.Context) error
	Close() error
}

// Subscribe implements throttle.RedisConn: a PubSub made without a channel
// (no round trip), then subscribed to channels under ctx.
func (c Conn) Subscribe(ctx context.Context, channels ...string) (Subscription, error) {
	ps := c.Client.Subscribe(context.Background())
	if err := ps.Subscribe(ctx, channels...); err != nil {
		_ = ps.Close()
		return nil, err
	}
	return pubSub{ps}, nil
}

// pubSub is a go-redis PubSub as a Subscription, with its own Close.
type pubSub struct{ *redis.PubSub }

// Receive implements Subscription: a *redis.Message's channel and payload,
// nothing for any other reply.
func (p pubSub) Receive(ctx context.Context, timeout time.Duration) (channel, payload string, err error) {
	msg, err := p.ReceiveTimeout(ctx, timeout)
	if m, ok := msg.(*redis.Message); ok && err == nil {
		return m.Channel, m.Payload, nil
	}
	return "", "", err
}

// Ping implements Subscription.
func (p pubSub) Ping(ctx context.Context) error { return p.PubSub.Ping(ctx) }
