package wecom

import (
	"context"
	"errors"
	"testing"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/internal/redistest"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// sharedLimiters returns n Redis limiters sharing one Redis and a key
// prefix of the test's own, closed at its end: n processes of a fleet.
func sharedLimiters(t *testing.T, n int) []*throttleredis.Backend {
	t.Helper()
	rdb := redistest.Single(t)
	prefix := redistest.Prefix(t, rdb)
	bs := make([]*throttleredis.Backend, n)
	for i := range bs {
		b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		bs[i] = b
	}
	return bs
}

// A 45009 seen by one process stops every process sharing the Redis limiter
// from calling that API until the block ends; other APIs go on.
func TestRedisSharedCooldown(t *testing.T) {
	var clients []*fixture
	for _, b := range sharedLimiters(t, 2) { // two processes: each its own backend and subscription
		clients = append(clients, setup(t, WithLimiter(b)))
	}
	a, b := clients[0], clients[1]
	a.respond("GET", catalog.TagList.Path(), `{"errcode":45009,"errmsg":"api freq out of limit"}`)
	b.respond("GET", catalog.TagList.Path(), `{"errcode":0,"errmsg":"ok","taglist":[]}`)
	b.respond("POST", catalog.TagUpdate.Path(), `{"errcode":0,"errmsg":"updated"}`)
	ctx := context.Background()
	_, err := a.c.Tags.List(ctx)
	a.record(err)
	if !errors.Is(err, ErrRateLimited) {
		t.Fatalf("first process: %v, want ErrRateLimited", err)
	}
	_, err = b.c.Tags.List(ctx)
	b.record(err)
	var rl *RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter <= 0 {
		t.Fatalf("second process during the block: %v, want a *RateLimitError", err)
	}
	if n := b.calls("GET", catalog.TagList.Path()); n != 0 {
		t.Errorf("the second process sent %d calls during the block", n)
	}
	if err := b.c.Tags.Update(ctx, TagUpdateRequest{ID: 1, Name: "x"}); err != nil {
		t.Errorf("another API during the block: %v", err)
	}
}
