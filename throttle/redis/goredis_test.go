package redis

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wecomkit/wecom/internal/redistest"
)

// TestScripts: EVAL and EVALSHA answer as go-redis reads them, and an
// unknown digest is the server's NOSCRIPT, with go-redis's RedisError.
func TestScripts(t *testing.T) {
	c := goRedis{client: redistest.Single(t)}
	ctx := context.Background()
	const src = "return {1, 'a', {2}}"
	v, err := c.Eval(ctx, src, nil)
	if err != nil || len(v.([]any)) != 3 || v.([]any)[0] != int64(1) || v.([]any)[1] != "a" {
		t.Fatalf("Eval = %#v, %v", v, err)
	}
	_, err = c.EvalSha(ctx, strings.Repeat("0", 40), nil)
	var rerr interface {
		error
		RedisError()
	}
	if !errors.As(err, &rerr) || !strings.HasPrefix(rerr.Error(), "NOSCRIPT") {
		t.Fatalf("EvalSha of an unknown digest: %v", err)
	}
}

// TestSubscription: a message published to a subscribed channel comes to
// Receive with its channel; a pong comes as no message; silence times out.
func TestSubscription(t *testing.T) {
	rdb := redistest.Single(t)
	c := goRedis{client: rdb}
	ctx := context.Background()
	ch := redistest.Prefix(t, rdb) + "ch"
	sub, err := c.Subscribe(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	if _, _, err := sub.Receive(ctx, time.Second); err != nil { // the confirmation
		t.Fatal(err)
	}
	if err := rdb.Publish(ctx, ch, "hello").Err(); err != nil {
		t.Fatal(err)
	}
	if channel, payload, err := sub.Receive(ctx, 5*time.Second); err != nil || channel != ch || payload != "hello" {
		t.Fatalf("Receive = %q, %q, %v", channel, payload, err)
	}
	if err := sub.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if channel, _, err := sub.Receive(ctx, 5*time.Second); err != nil || channel != "" {
		t.Fatalf("Receive after a PING = %q, %v", channel, err)
	}
	var ne net.Error
	if _, _, err := sub.Receive(ctx, 50*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Receive with nothing sent = %v, want a timeout", err)
	}
}
