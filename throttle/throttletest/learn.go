package throttletest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// testLimitStore: a backend that keeps learned limits (throttle.LimitStore)
// swaps them only from the value stored, once among racing swappers, and
// removes them with the zero Learned.
func testLimitStore(t *testing.T, e *env) {
	s, ok := e.b.(throttle.LimitStore)
	if !ok {
		t.Skip("the backend keeps no learned limits")
	}
	ctx := context.Background()
	at := time.UnixMilli(1_790_000_000_123)
	load := func(want throttle.Learned, wantOK bool) {
		t.Helper()
		got, ok, err := s.LoadLimit(ctx, "learn")
		if err != nil || ok != wantOK || got.Limit != want.Limit || !got.Since.Equal(want.Since) {
			t.Errorf("LoadLimit = %+v, %t, %v; want %+v, %t", got, ok, err, want, wantOK)
		}
	}
	swap := func(prev, next throttle.Learned, want bool) {
		t.Helper()
		if got, err := s.SwapLimit(ctx, "learn", prev, next); err != nil || got != want {
			t.Errorf("SwapLimit(%+v -> %+v) = %t, %v; want %t", prev, next, got, err, want)
		}
	}
	three, two := throttle.Learned{Limit: 3, Since: at}, throttle.Learned{Limit: 2, Since: at.Add(time.Second)}
	load(throttle.Learned{}, false)
	swap(throttle.Learned{}, three, true)
	swap(throttle.Learned{}, two, false) // not what is stored any more
	load(three, true)
	swap(throttle.Learned{Limit: 3, Since: at.Add(time.Millisecond)}, two, false)
	swap(three, two, true)
	load(two, true)
	swap(two, throttle.Learned{}, true)
	load(throttle.Learned{}, false)
	if _, err := s.SwapLimit(ctx, "", throttle.Learned{}, three); err == nil {
		t.Error("SwapLimit on an empty key")
	}

	var won atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			ok, err := s.SwapLimit(ctx, "race", throttle.Learned{}, throttle.Learned{Limit: i + 1, Since: at})
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Errorf("%d of 20 racing swaps from nothing won, want 1", won.Load())
	}
}
