// Conformance tests of the stalls an Acquire tells of (Request.OnStall).
package throttletest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// testStallTold: waits of more than StallAfter for a rate window or a
// cooldown are told before they start, to the head of the line and to a
// waiter arriving behind it, with the reason and when they end; a wait for
// a slot is not.
func testStallTold(t *testing.T, e *env) {
	long := max(3*throttle.StallAfter, 3*e.u)
	for _, tc := range []struct {
		name string
		r    throttle.Request
		fill func(ctx context.Context, r throttle.Request)
		want throttle.Reason
	}{
		{"rate", throttle.Request{Key: "stall-rate", Windows: []throttle.Window{{Limit: 1, Period: long}}},
			func(ctx context.Context, r throttle.Request) { mustAcquire(t, ctx, e.b, r) }, throttle.ReasonRate},
		{"cooldown", throttle.Request{Key: "stall-cd", WaitCooldown: true},
			func(ctx context.Context, r throttle.Request) {
				if err := e.b.Cooldown(ctx, r.Key, long); err != nil {
					t.Fatal(err)
				}
			}, throttle.ReasonCooldown},
		{"members", throttle.Request{Key: "stall-members", Windows: []throttle.Window{{Limit: 1, Period: long}}, Members: []string{"a", "b"}},
			func(ctx context.Context, r throttle.Request) { mustAcquire(t, ctx, e.b, r) }, throttle.ReasonRate},
	} {
		func() { // no t.Run: the suite may run in a synctest bubble
			tc.fill(context.Background(), tc.r)
			start := time.Now()
			var wg sync.WaitGroup
			for i := range 2 { // the head, then one arriving behind it
				ctx, cancel := context.WithCancel(context.Background())
				var told []throttle.Stall
				r := tc.r
				r.OnStall = func(s throttle.Stall) {
					told = append(told, s) // the acquiring goroutine only
					cancel()
				}
				wg.Go(func() {
					defer cancel()
					_, err := e.b.Acquire(ctx, r)
					if !errors.Is(err, context.Canceled) {
						t.Errorf("%s, waiter %d: Acquire = %v, want it cancelled by its StallFunc", tc.name, i, err)
					}
					if len(told) != 1 {
						t.Errorf("%s, waiter %d: told %v, want one stall", tc.name, i, told)
						return
					}
					s := told[0]
					if s.Key != tc.r.Key || s.Reason != tc.want || s.Until.Before(start.Add(throttle.StallAfter)) {
						t.Errorf("%s, waiter %d: told %+v, want %s on %q until after %s", tc.name, i, s, tc.want, tc.r.Key, throttle.StallAfter)
					}
				})
				e.settle()
			}
			wg.Wait()
		}()
	}
	// A wait for a slot is no stall.
	r := throttle.Request{Key: "stall-slot", Concurrency: 1}
	l := mustAcquire(t, context.Background(), e.b, r)
	ctx, cancel := context.WithCancel(context.Background())
	r.OnStall = func(s throttle.Stall) { t.Errorf("told %+v for a slot", s) }
	done := make(chan error, 1)
	go func() { _, err := e.b.Acquire(ctx, r); done <- err }()
	e.settle()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire of a held slot = %v, want cancelled", err)
	}
	mustRelease(t, e.b, l)
}
