package throttle

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestAIMD(t *testing.T) {
	t.Parallel()
	a := AIMD{}.withDefaults()
	now := time.UnixMilli(1_790_000_000_000)
	for _, tc := range []struct {
		name              string
		cur               Learned
		configured, under int
		want              int // 0: no change
	}{
		{"first refusal", Learned{}, 5, 5, 4},
		{"refused under the learned limit", Learned{Limit: 4, Since: now}, 5, 4, 3},
		{"refused under a limit already lowered", Learned{Limit: 4, Since: now}, 5, 5, 0},
		{"large limits drop by a tenth", Learned{}, 100, 100, 90},
		{"never below 1", Learned{Limit: 1, Since: now}, 5, 1, 0},
		{"from 2 to 1", Learned{Limit: 2, Since: now}, 5, 2, 1},
	} {
		next, changed := a.lower(tc.cur, tc.configured, tc.under, now)
		if changed != (tc.want > 0) || (changed && next.Limit != tc.want) {
			t.Errorf("%s: lower = %+v, %t; want %d", tc.name, next, changed, tc.want)
		}
	}
	for _, tc := range []struct {
		name       string
		cur        Learned
		after      time.Duration
		configured int
		want       int // -1: no change; 0: back to the configured limit
	}{
		{"nothing learned", Learned{}, time.Hour, 5, -1},
		{"before the quiet period", Learned{Limit: 3, Since: now}, a.Quiet - time.Millisecond, 5, -1},
		{"after it", Learned{Limit: 3, Since: now}, a.Quiet, 5, 4},
		{"back to the configured limit", Learned{Limit: 4, Since: now}, a.Quiet, 5, 0},
	} {
		next, changed := a.raise(tc.cur, tc.configured, now.Add(tc.after))
		if changed != (tc.want >= 0) || (changed && next.Limit != tc.want) {
			t.Errorf("%s: raise = %+v, %t; want %d", tc.name, next, changed, tc.want)
		}
	}
}

// fakeNow is a clock for Learners under test.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeNow) add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// TestLearnerSharesWhatItLearns: two processes' Learners on one store: a
// refusal in one lowers the limit in both (the other sees it at its next
// refresh), racing refusals of calls granted under one limit lower it once,
// and quiet periods raise it back one step at a time to the configured
// limit, never above; every change is reported once.
func TestLearnerSharesWhatItLearns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := NewMemory()
	clock := &fakeNow{t: time.UnixMilli(1_790_000_000_000)}
	a, b := NewLearner(store, AIMD{Quiet: time.Minute}, time.Second), NewLearner(store, AIMD{Quiet: time.Minute}, time.Second)
	a.now, b.now = clock.now, clock.now
	limit := func(l *Learner, want int, wantChange bool) {
		t.Helper()
		got, ch := l.Limit(ctx, "k", 5)
		if got != want || (ch != nil) != wantChange || (ch != nil && (ch.To != want || ch.Refused)) {
			t.Errorf("Limit = %d, %+v; want %d (a change: %t)", got, ch, want, wantChange)
		}
	}
	limit(a, 5, false)
	limit(b, 5, false)

	var wg sync.WaitGroup
	changes := make(chan *Change, 10)
	for range 10 { // ten calls granted under 5 refused at once
		wg.Go(func() {
			ch, err := a.Refused(ctx, "k", 5, 5)
			if err != nil {
				t.Error(err)
			}
			if ch != nil {
				changes <- ch
			}
		})
	}
	wg.Wait()
	close(changes)
	n := 0
	for ch := range changes {
		n++
		if ch.From != 5 || ch.To != 4 || !ch.Refused {
			t.Errorf("change %+v", ch)
		}
	}
	if n != 1 {
		t.Errorf("%d changes reported for one lowering", n)
	}
	limit(a, 4, false)
	limit(b, 5, false) // not refreshed yet
	clock.add(time.Second)
	limit(b, 4, true)
	if ch, _ := b.Refused(ctx, "k", 5, 4); ch == nil || ch.To != 3 {
		t.Errorf("refusal under 4: %+v", ch)
	}
	clock.add(time.Second)
	limit(a, 3, true)

	for _, want := range []int{4, 5, 5} {
		clock.add(time.Minute)
		limit(a, want, want != 5 || a.keys["k"].told != 5)
		clock.add(time.Second)
		limit(b, want, b.keys["k"].told != want)
	}
	if _, ok, _ := store.LoadLimit(ctx, "k"); ok {
		t.Error("a learned limit is left at the configured one")
	}
}

// failingStore fails every call.
type failingStore struct{}

func (failingStore) LoadLimit(context.Context, string) (Learned, bool, error) {
	return Learned{}, false, ErrUnavailable
}

func (failingStore) SwapLimit(context.Context, string, Learned, Learned) (bool, error) {
	return false, ErrUnavailable
}

// TestLearnerWithoutStore: when the store fails, a refusal still lowers the
// limit in this process, and the error says the fleet was not told.
func TestLearnerWithoutStore(t *testing.T) {
	t.Parallel()
	l := NewLearner(failingStore{}, AIMD{}, time.Second)
	ctx := context.Background()
	if got, ch := l.Limit(ctx, "k", 5); got != 5 || ch != nil {
		t.Errorf("Limit = %d, %+v", got, ch)
	}
	ch, err := l.Refused(ctx, "k", 5, 5)
	if err == nil || ch == nil || ch.To != 4 {
		t.Errorf("Refused = %+v, %v; want 4 here and an error", ch, err)
	}
	if got, _ := l.Limit(ctx, "k", 5); got != 4 {
		t.Errorf("Limit after = %d, want 4", got)
	}
}
