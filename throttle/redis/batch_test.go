package redis

// Batched grants: one round trip serves every waiter of a process the
// limits admit.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
)

// TestRedisBatchedGrants: eight waiters of one process queue behind a
// cooldown on a key with eight slots, or with windows and no concurrency
// limit; when it ends, the head's one ask grants all eight, not one round
// trip each (only a key of one slot asks alone: a batch would get no more).
func TestRedisBatchedGrants(t *testing.T) {
	t.Parallel()
	for _, conc := range []int{8, 0} {
		t.Run(fmt.Sprintf("concurrency %d", conc), func(t *testing.T) {
			b, rec := withBackend(t, redistest.Single(t))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r := throttle.Request{Key: "{corp}/batch", Concurrency: conc, TTL: time.Minute, WaitCooldown: true,
				Windows: []throttle.Window{{Limit: 100, Period: time.Minute}}}
			warm := mustTake(t, b, r) // loads the scripts and learns the epoch
			if err := b.Release(ctx, warm); err != nil {
				t.Fatal(err)
			}
			if err := b.Cooldown(ctx, r.Key, 300*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			var got []<-chan acquired
			for range 8 {
				got = append(got, acquireAsync(ctx, b, r))
			}
			queued(t, b, r.Key, 8)
			headRefused(t, b, r.Key)
			rec.runs()
			ids := make(map[string]bool)
			for _, ch := range got {
				a := <-ch
				if a.err != nil {
					t.Fatal(a.err)
				}
				ids[a.l.ID] = true
				defer func() { _ = b.Release(context.Background(), a.l) }()
			}
			if n := rec.runs(); n > 2 {
				t.Errorf("8 waiters took %d scripts after the cooldown, want 1 (2 at most, a timer racing)", n)
			}
			if len(ids) != 8 {
				t.Errorf("%d distinct leases, want 8", len(ids))
			}
			if n := holders(t, b, r.Key); n != int64(conc) {
				t.Errorf("%d holders in Redis, want %d", n, conc)
			}
			if n := windowTotal(t, b, r, time.Minute); n != 9 {
				t.Errorf("the window counts %d, want 9 (the warm-up and the batch)", n)
			}
		})
	}
}
