// What the Redis backend asks of a Redis client (redisConn), the scripts it
// runs on one (script), and their replies (replySlice and the others).

package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// redisConn is the little the Redis backend asks of a Redis client. // programs do not implement it: New adapts a go-redis client.
//
// A command the server refused returns an error with a RedisError method
// (as go-redis's do), which tells it from an outage; any other error counts
// as Redis unreachable.
type redisConn interface {
	// EvalSha runs the cached script of that SHA-1 digest (EVALSHA) and
	// returns its reply: an int64, a string, a []any of those, or an error.
	EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) (any, error)
	// Eval runs the script's source (EVAL), with the reply of EvalSha.
	Eval(ctx context.Context, src string, keys []string, args ...any) (any, error)
	// SetNX sets key to value, expiring after ttl, if key does not exist
	// (SET key value NX PX ttl), and reports whether it did.
	SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	// Ping sends a PING.
	Ping(ctx context.Context) error
	// Subscribe makes a subscription on its own connection to channels.
	Subscribe(ctx context.Context, channels ...string) (subscription, error)
}

// subscription is a subscription a redisConn made (an alias of an
// interface literal, so that an adapter need not import this package).
type subscription = interface {
	// Receive waits up to timeout for what the server sends next, and
	// returns its channel and payload when it is a message; channel is
	// empty for anything else (a pong, a subscription's confirmation). A
	// timeout is a net.Error whose Timeout is true.
	Receive(ctx context.Context, timeout time.Duration) (channel, payload string, err error)
	// Ping sends a PING on the subscription; its pong comes to Receive.
	Ping(ctx context.Context) error
	// Close ends the subscription.
	Close() error
}

// redisError is an error the Redis server answered (go-redis's Error): a
// command it refused, as opposed to an outage.
type redisError interface {
	error
	RedisError()
}

// script is a Lua script run by its digest, and by its source when the
// server's script cache lacks it.
type script struct {
	src, hash string
}

// newScript returns the script of source src.
func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, hash: hex.EncodeToString(sum[:])}
}

// run runs s on conn: EVALSHA, then EVAL after a NOSCRIPT.
func (s *script) run(ctx context.Context, conn redisConn, keys []string, args ...any) (any, error) {
	v, err := conn.EvalSha(ctx, s.hash, keys, args...)
	var rerr redisError // NOSCRIPT, from the server (some put "ERR " before it)
	if errors.As(err, &rerr) && strings.HasPrefix(strings.TrimPrefix(rerr.Error(), "ERR "), "NOSCRIPT") {
		return conn.Eval(ctx, s.src, keys, args...)
	}
	return v, err
}

// replyAs reads a script's reply as a T.
func replyAs[T any](v any, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return t, fmt.Errorf("redis: unexpected type=%T for %T", v, t)
	}
	return t, nil
}

// replySlice reads a script's reply as a list.
func replySlice(v any, err error) ([]any, error) { return replyAs[[]any](v, err) }

// replyInt64 reads a script's reply as an integer (or a string of one).
func replyInt64(v any, err error) (int64, error) {
	if s, ok := v.(string); ok && err == nil {
		return strconv.ParseInt(s, 10, 64)
	}
	return replyAs[int64](v, err)
}

// replyFields reads a script's keyed reply of integers: a flat list of
// field names and values, as a map.
func replyFields(v any, err error) (map[string]int64, error) {
	s, err := replySlice(v, err)
	if err != nil {
		return nil, err
	}
	if len(s)%2 != 0 {
		return nil, fmt.Errorf("redis: a keyed reply of odd length %d", len(s))
	}
	out := make(map[string]int64, len(s)/2)
	for i := 0; i < len(s); i += 2 {
		name, ok := s[i].(string)
		if !ok {
			return nil, fmt.Errorf("redis: a keyed reply's field name %v is no string", s[i])
		}
		if out[name], err = replyInt64(s[i+1], nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}
