package redis

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// Releases that no waiter wants go later, together: no script on the
// caller's path, one for the lot. Meanwhile the leases are released for
// this process (a second Release or an Extend is refused), and an Acquire
// of one of their keys sends them first rather than wait for itself.
func TestRedisReleasesLater(t *testing.T) {
	t.Parallel()
	b, c := hotBackend(t)
	ctx := context.Background()
	var ls []throttle.Lease
	for i := range 5 {
		ls = append(ls, mustTake(t, b, throttle.Request{Key: fmt.Sprintf("{c}/cust%d", i), Concurrency: 1, TTL: time.Minute}))
	}
	c.runs()
	for _, l := range ls {
		if err := b.Release(ctx, l); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	if n := c.runs(); n != 0 {
		t.Errorf("the releases ran %d scripts on the callers' path, want 0", n)
	}
	if err := b.Release(ctx, ls[0]); !errors.Is(err, throttle.ErrLeaseNotHeld) {
		t.Errorf("second Release of a lease released later = %v, want ErrLeaseNotHeld", err)
	}
	if _, err := b.Extend(ctx, ls[1], time.Minute); !errors.Is(err, throttle.ErrLeaseNotHeld) {
		t.Errorf("Extend of a lease released later = %v, want ErrLeaseNotHeld", err)
	}
	l, err := b.TryAcquire(ctx, throttle.Request{Key: ls[2].Key, Concurrency: 1, TTL: time.Minute})
	if err != nil {
		t.Fatalf("TryAcquire of a key whose release was deferred: %v", err)
	}
	if n := c.runs(); n != 2 {
		t.Errorf("TryAcquire after the deferred releases ran %d scripts, want 2: the releases in one, then its own", n)
	}
	for _, l := range ls {
		if n := holders(t, b, l.Key); n != 0 && l.Key != ls[2].Key {
			t.Errorf("%q: %d holders after the deferred releases were sent, want 0", l.Key, n)
		}
	}
	if err := b.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := holders(t, b, l.Key); n != 0 {
		t.Errorf("%d holders after Close, want 0: Close sends the deferred releases", n)
	}
}

// A release goes at once when another process is known to wait for the
// slot, or when the lease has too little TTL left for its release to be
// sure to find it held.
func TestRedisReleasesAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		ttl       time.Duration
		contended bool
	}{
		{"another process waits", time.Minute, true},
		{"short TTL", time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c := hotBackend(t)
			r := throttle.Request{Key: "{c}/now", Concurrency: 1, TTL: tc.ttl}
			l := mustTake(t, b, r)
			if tc.contended {
				b.noteContended(r.Key, true, time.Time{})
			}
			c.runs()
			if err := b.Release(context.Background(), l); err != nil {
				t.Fatal(err)
			}
			if n := c.runs(); n != 1 {
				t.Errorf("the release ran %d scripts, want 1", n)
			}
			if n := holders(t, b, r.Key); n != 0 {
				t.Errorf("%d holders, want 0", n)
			}
		})
	}
}
