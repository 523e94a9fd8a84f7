// Package redisdedupe is a callback.Deduper on Redis, shared by the
// replicas of a callback receiver. It links go-redis and the callback
// package, not the client: a program that only receives callbacks needs
// no wecom.Client.
package redisdedupe

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wecomkit/wecom/callback"
)

// Deduper is a callback.Deduper on Redis, shared by every replica of a
// callback receiver using the same Redis and prefix, so that WeCom's retry
// of a callback that reached one replica is not delivered again by
// another. Each key is one SET NX PX: atomic, one round trip, and one key,
// so it works with a single node, Sentinel and Cluster alike. Keys are
// callback.Handler's: its namespace (a short hash of the receiver, or
// callback.WithDedupeNamespace) and a message's MsgId or a SHA-256 of an
// event, never a secret. A Deduper is safe for concurrent use.
type Deduper struct {
	rdb    redis.UniversalClient
	prefix string
}

var _ callback.Deduper = (*Deduper)(nil)

// New returns a Deduper keeping keys in rdb under prefix (which may
// be empty). The caller keeps ownership of rdb.
func New(rdb redis.UniversalClient, prefix string) (*Deduper, error) {
	if rdb == nil {
		return nil, &callback.Error{Class: callback.ErrConfig, Reason: "nil redis client"}
	}
	return &Deduper{rdb: rdb, prefix: prefix}, nil
}

// Seen implements callback.Deduper: SET prefix+key NX PX ttl, seen when
// the key was already there. A ttl <= 0 records nothing and reports
// whether the key is there.
func (d *Deduper) Seen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		n, err := d.rdb.Exists(ctx, d.prefix+key).Result()
		if err != nil {
			return false, fmt.Errorf("redisdedupe: exists: %w", err)
		}
		return n > 0, nil
	}
	// Redis counts whole milliseconds: round up, so a ttl under one is kept.
	if r := ttl % time.Millisecond; r != 0 {
		ttl += time.Millisecond - r
	}
	set, err := d.rdb.SetNX(ctx, d.prefix+key, "1", ttl).Result() // SET NX PX
	if err != nil {
		return false, fmt.Errorf("redisdedupe: set: %w", err)
	}
	return !set, nil
}

// Forget implements callback.Deduper: DEL prefix+key.
func (d *Deduper) Forget(ctx context.Context, key string) error {
	if err := d.rdb.Del(ctx, d.prefix+key).Err(); err != nil {
		return fmt.Errorf("redisdedupe: del: %w", err)
	}
	return nil
}
