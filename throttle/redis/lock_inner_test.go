package redis

// Locks held as STRINGs, from the inside: a key asked for in two shapes,
// and a TTL Redis cannot count.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
)

// One process asking for one key in two shapes (a lock, and one slot with
// a window) is unsupported, but a Release of the lock with a waiter of the
// other shape queued gives the lock back rather than leave it held until
// its TTL: the hand-over goes apart.
func TestRedisKeyInTwoShapesLeaksNoLock(t *testing.T) {
	b, _ := withBackend(t, redistest.Single(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lockR := throttle.Request{Key: "{c}/mixed", Concurrency: 1, TTL: time.Minute}
	winR := throttle.Request{Key: "{c}/mixed", Concurrency: 1, TTL: time.Minute, Windows: []throttle.Window{{Limit: 1, Period: time.Minute}}}
	w1 := mustTake(t, b, winR) // uses the window up
	if err := b.Release(ctx, w1); err != nil {
		t.Fatal(err)
	}
	l := mustTake(t, b, lockR)
	wctx, wcancel := context.WithCancel(context.Background()) // no deadline: a rate refusal does not fail it
	defer wcancel()
	ww := acquireAsync(wctx, b, winR) // refused by its window: waits in line
	headRefused(t, b, winR.Key)
	err := b.Release(ctx, l)
	v, _ := client(b).Get(ctx, b.names(lockR.Key, nil).lock).Result()
	pttl := client(b).PTTL(ctx, b.names(lockR.Key, nil).lock).Val()
	t.Logf("Release(lock) = %v; lock STRING now %q (PTTL %s)", err, v, pttl)
	if v == l.ID {
		t.Errorf("the lock's STRING is still held by the released lease %q for %s", l.ID, pttl)
	}
	wcancel()
	<-ww
}

// The Redis backend counts a lease's TTL in milliseconds: a slot's TTL
// under one is refused, not sent as a PX 0 Redis would refuse after a
// hand-over freed the slot.
func TestRedisRefusesTTLUnderAMillisecond(t *testing.T) {
	b, _ := withBackend(t, redistest.Single(t))
	_, err := b.TryAcquire(context.Background(), throttle.Request{Key: "{c}/tiny", Concurrency: 1, TTL: 500 * time.Microsecond})
	if !errors.Is(err, throttle.ErrInvalidRequest) {
		t.Errorf("TryAcquire with a TTL of 500us = %v, want ErrInvalidRequest", err)
	}
}
