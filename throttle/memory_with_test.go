package throttle

import (
	"context"
	"testing"
	"time"
)

// TestMemoryCancelAtGrantFreesWith: a waiter whose own key holds nothing
// (it waits out a cooldown) is granted with a With slot as its caller gives
// up; the key's state is forgotten at the grant, and the With slot must be
// given back all the same. (Five runs of five failed before the fix.)
func TestMemoryCancelAtGrantFreesWith(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	ctx := context.Background()
	lock := Request{Key: "lock", Concurrency: 1, TTL: time.Minute}
	r := Request{Key: "api", WaitCooldown: true, With: []Request{lock}}
	if err := m.Cooldown(ctx, "api", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { _, err := m.Acquire(cctx, r); done <- err }()
	time.Sleep(50 * time.Millisecond) // a trigger, not an assertion: the waiter queues
	m.mu.Lock()                       // the cooldown's end passes with the lock held: the grant and the cancel race
	time.Sleep(100 * time.Millisecond)
	cancel()
	m.mu.Unlock()
	if err := <-done; err != nil {
		if _, terr := m.TryAcquire(ctx, lock); terr != nil {
			t.Errorf("the caller got %v, yet its lock is held: %v", err, terr)
		}
	}
}
