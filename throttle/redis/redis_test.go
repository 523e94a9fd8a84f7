package redis_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// TestNewNilClient: no client is a validation error, not a backend that
// fails later.
func TestNewNilClient(t *testing.T) {
	b, err := throttleredis.New(nil, throttleredis.Options{})
	if b != nil || !errors.Is(err, throttle.ErrInvalidRequest) {
		t.Fatalf("New(nil) = %v, %v; want ErrInvalidRequest", b, err)
	}
}

// TestNewBadOptions: the options are checked as newBackend checks
// them, before anything dials.
func TestNewBadOptions(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialed
	t.Cleanup(func() { _ = rdb.Close() })
	for _, opt := range []throttleredis.Options{{Prefix: "a{b}:"}, {LocalShare: 2}, {OpTimeout: -1}} {
		if b, err := throttleredis.New(rdb, opt); b != nil || !errors.Is(err, throttle.ErrInvalidRequest) {
			t.Errorf("New(%+v) = %v, %v; want ErrInvalidRequest", opt, b, err)
		}
	}
}
