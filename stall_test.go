package wecom

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// Calls that wait out a 45009's cooldown are not silent: each tells the
// stall observer why and until when before it waits, and the log says it
// once for the key, not once per call.
func TestStallToldOncePerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var told []throttle.Stall
		f := setup(t, WithWaitOnRateLimit(true), WithStallObserver(func(_ context.Context, path string, s throttle.Stall) {
			if path != catalog.TagList.Path() {
				t.Errorf("stall told for %q", path)
			}
			mu.Lock()
			told = append(told, s)
			mu.Unlock()
		}))
		f.mt.RegisterResponder("GET", testBaseURL+catalog.TagList.Path(), sequence(
			`{"errcode":45009,"errmsg":"api freq out of limit"}`,
			`{"errcode":0,"errmsg":"ok","taglist":[]}`))
		start := time.Now()
		if _, err := f.c.Tags.List(context.Background()); err != nil {
			t.Fatal(err)
		}
		// A second block: three calls wait it out together.
		f.mt.RegisterResponder("GET", testBaseURL+catalog.TagList.Path(), sequence(
			`{"errcode":45009,"errmsg":"api freq out of limit"}`,
			`{"errcode":0,"errmsg":"ok","taglist":[]}`))
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if _, err := f.c.Tags.List(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()

		mu.Lock()
		defer mu.Unlock()
		if len(told) < 2 {
			t.Fatalf("told %d stalls, want one per block at least", len(told))
		}
		for _, s := range told {
			if s.Reason != throttle.ReasonCooldown || !s.Until.After(start.Add(throttle.StallAfter)) || !strings.Contains(s.Key, catalog.TagList.Path()) {
				t.Errorf("told %+v, want the cooldown of %s", s, catalog.TagList.Path())
			}
		}
		if n := strings.Count(f.logs.String(), "calls wait for a limit"); n != 2 {
			t.Errorf("%d log lines of a stall, want one per block:\n%s", n, f.logs.String())
		}
	})
}
