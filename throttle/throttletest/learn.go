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
	load := func(wantLimit int, wantOK bool) throttle.Learned {
		t.Helper()
		got, now, ok, err := s.LoadLimit(ctx, "learn")
		if err != nil || ok != wantOK || got.Limit != wantLimit || now.IsZero() || (ok && now.Before(got.Since)) {
			t.Errorf("LoadLimit = %+v, %v, %t, %v; want limit %d, %t, and a store time not before Since", got, now, ok, err, wantLimit, wantOK)
		}
		return got
	}
	swap := func(prev throttle.Learned, next int, want bool) throttle.Learned {
		t.Helper()
		stored, got, err := s.SwapLimit(ctx, "learn", prev, next)
		if err != nil || got != want || (got && stored.Limit != next) {
			t.Errorf("SwapLimit(%+v -> %d) = %+v, %t, %v; want %t", prev, next, stored, got, err, want)
		}
		return stored
	}
	load(0, false)
	three := swap(throttle.Learned{}, 3, true)
	if three.Since.IsZero() {
		t.Error("a stored limit has no Since")
	}
	swap(throttle.Learned{}, 2, false) // not what is stored any more
	if got := load(3, true); !got.Since.Equal(three.Since) {
		t.Errorf("loaded Since %v, stored %v", got.Since, three.Since)
	}
	swap(throttle.Learned{Limit: 3, Since: three.Since.Add(time.Millisecond)}, 2, false)
	two := swap(three, 2, true)
	load(2, true)
	swap(two, 0, true)
	load(0, false)
	if _, _, err := s.SwapLimit(ctx, "", throttle.Learned{}, 3); err == nil {
		t.Error("SwapLimit on an empty key")
	}

	var won atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			_, ok, err := s.SwapLimit(ctx, "race", throttle.Learned{}, i+1)
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
