package callback_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// TestReplayWithinWindowAfterFirstDelivery: WeCom's clock is 4 minutes
// ahead of this server's; a captured callback replayed 5 minutes later is
// still inside the timestamp window, and is still a duplicate.
func TestReplayWithinWindowAfterFirstDelivery(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, _ := callback.NewCrypto(testToken, testKey, testCorpID)
		h, err := callback.NewHandler(c)
		if err != nil {
			t.Fatal(err)
		}
		var n atomic.Int32
		callback.Handle(h, func(context.Context, *callback.ContactEvent) error { n.Add(1); return nil })
		wecomNow := time.Now().Add(4 * time.Minute)
		s := seal(t, c, contactXML("zhangsan", wecomNow.Unix()), wecomNow.Unix())
		for _, wait := range []time.Duration{0, 5*time.Minute + time.Second, 3 * time.Minute} {
			time.Sleep(wait)
			if rec := serve(h, s); rec.Code != http.StatusOK {
				t.Fatalf("after %v: %d", wait, rec.Code)
			}
		}
		if n.Load() != 1 {
			t.Fatalf("replayed request delivered %d times", n.Load())
		}
	})
}

// TestDedupeTTLCoversWindow: NewHandler refuses a dedupe TTL shorter than
// twice the timestamp window plus WeCom's retry span.
func TestDedupeTTLCoversWindow(t *testing.T) {
	t.Parallel()
	c := docCrypto(t)
	mem, _ := callback.NewMemoryDeduper(1)
	for _, tc := range []struct {
		window, ttl time.Duration
		ok          bool
	}{
		{0, 0, true}, // both defaults
		{callback.DefaultTimestampWindow, 10 * time.Minute, false},
		{callback.DefaultTimestampWindow, 11 * time.Minute, true},
		{time.Minute, 3 * time.Minute, true},
		{time.Minute, 3*time.Minute - time.Second, false},
		{-1, callback.RetrySpan, true}, // window off: the retries only
		{-1, callback.RetrySpan - time.Second, false},
	} {
		opts := []callback.Option{callback.WithDeduper(mem, tc.ttl)}
		switch {
		case tc.window > 0:
			opts = append(opts, callback.WithTimestampWindow(tc.window))
		case tc.window < 0:
			opts = append(opts, callback.WithTimestampWindow(0))
		}
		h, err := callback.NewHandler(c, opts...)
		if tc.ok != (err == nil) || (err != nil && (h != nil || !errors.Is(err, callback.ErrConfig))) {
			t.Errorf("window %v, ttl %v: %v", tc.window, tc.ttl, err)
		}
	}
	if callback.DefaultDedupeTTL < 2*callback.DefaultTimestampWindow+callback.RetrySpan {
		t.Fatalf("default TTL %v does not cover the default window", callback.DefaultDedupeTTL)
	}
}
