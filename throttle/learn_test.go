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
		next, changed := a.lower(tc.cur, tc.configured, tc.under)
		if changed != (tc.want > 0) || (changed && next != tc.want) {
			t.Errorf("%s: lower = %d, %t; want %d", tc.name, next, changed, tc.want)
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
		if changed != (tc.want >= 0) || (changed && next != tc.want) {
			t.Errorf("%s: raise = %d, %t; want %d", tc.name, next, changed, tc.want)
		}
	}
}

// fakeNow is a settable clock.
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

// clockStore is a LimitStore on a clock of its own, as Redis's TIME is.
type clockStore struct {
	clock *fakeNow
	mu    sync.Mutex
	m     map[string]Learned
}

func newClockStore(clock *fakeNow) *clockStore {
	return &clockStore{clock: clock, m: make(map[string]Learned)}
}

func (s *clockStore) LoadLimit(ctx context.Context, key string) (Learned, time.Time, bool, error) {
	if err := ctx.Err(); err != nil { // as Redis's round trip would
		return Learned{}, time.Time{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.m[key]
	return l, s.clock.now(), ok, nil
}

func (s *clockStore) SwapLimit(_ context.Context, key string, prev Learned, next int) (Learned, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[key] != prev {
		return Learned{}, false, nil
	}
	if next == 0 {
		delete(s.m, key)
		return Learned{}, true, nil
	}
	l := Learned{Limit: next, Since: s.clock.now()}
	s.m[key] = l
	return l, true, nil
}

// limitAfterRead returns what l.Limit answers once the read it found due,
// if any, has ended: a read after the first runs behind the call, and the
// next call tells its change (a change told by either counts, from the
// first's From).
func limitAfterRead(ctx context.Context, l *Learner, key string, configured int) (int, *Change) {
	_, ch := l.Limit(ctx, key, configured)
	l.mu.Lock()
	done := l.keys[key].done // made by that call before it returned; nil once the read ended
	l.mu.Unlock()
	if done != nil {
		<-done
	}
	got, again := l.Limit(ctx, key, configured)
	switch {
	case again != nil && ch != nil:
		again.From = ch.From
		ch = again
	case again != nil:
		ch = again
	}
	return got, ch
}

// TestLearnerSharesWhatItLearns: two processes' Learners on one store: a
// refusal in one lowers the limit in both (the other sees it at its next
// refresh), racing refusals of calls granted under one limit lower it once,
// and quiet periods by the store's clock raise it back one step at a time
// to the configured limit, never above; every change is reported once.
func TestLearnerSharesWhatItLearns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeNow{t: time.UnixMilli(1_790_000_000_000)}
	store := newClockStore(clock)
	a, b := NewLearner(store, AIMD{Quiet: time.Minute}, time.Second), NewLearner(store, AIMD{Quiet: time.Minute}, time.Second)
	a.now, b.now = clock.now, clock.now
	limit := func(l *Learner, want int, wantChange bool) {
		t.Helper()
		got, ch := limitAfterRead(ctx, l, "k", 5)
		if got != want || (ch != nil) != wantChange || (ch != nil && (ch.To != want || ch.Refused)) {
			t.Errorf("Limit = %d, %+v; want %d (a change: %t)", got, ch, want, wantChange)
		}
	}
	limit(a, 5, false)
	limit(b, 5, false)

	refuseAtOnceLowersOnce(ctx, t, a)
	limit(a, 4, false)
	limit(b, 5, false) // not refreshed yet
	clock.add(time.Second)
	limit(b, 4, true)
	if ch, _ := b.Refused(ctx, "k", 5, 4); ch == nil || ch.To != 3 {
		t.Errorf("refusal under 4: %+v", ch)
	}
	clock.add(time.Second)
	limit(a, 3, true)

	for _, want := range []int{4, 5} {
		clock.add(time.Minute)
		limit(a, want, true)
		clock.add(time.Second)
		limit(b, want, true)
	}
	clock.add(time.Minute)
	limit(a, 5, false)
	if _, _, ok, _ := store.LoadLimit(ctx, "k"); ok {
		t.Error("a learned limit is left at the configured one")
	}
}

// refuseAtOnceLowersOnce has ten calls granted under a's limit of 5 refused
// at once, and checks that the limit is lowered once, to 4, and the change
// reported once.
func refuseAtOnceLowersOnce(ctx context.Context, t *testing.T, a *Learner) {
	t.Helper()
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
}

// TestLearnerIgnoresPodClocks: a process whose clock is minutes behind or
// ahead neither undoes another's lowering at once nor holds back the raise:
// quiet periods are timed by the store's clock.
func TestLearnerIgnoresPodClocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	storeClock := &fakeNow{t: time.UnixMilli(1_790_000_000_000)}
	behind, ahead := &fakeNow{t: storeClock.t.Add(-2 * time.Minute)}, &fakeNow{t: storeClock.t.Add(10 * time.Minute)}
	store := newClockStore(storeClock)
	a, b := NewLearner(store, AIMD{}, time.Second), NewLearner(store, AIMD{}, time.Second)
	a.now, b.now = behind.now, ahead.now
	if ch, _ := a.Refused(ctx, "k", 5, 5); ch == nil || ch.To != 4 {
		t.Fatalf("Refused = %+v", ch)
	}
	for _, c := range []*fakeNow{storeClock, behind, ahead} {
		c.add(time.Second)
	}
	if got, _ := limitAfterRead(ctx, b, "k", 5); got != 4 {
		t.Errorf("the pod ahead sees %d, want 4: it undid the lowering", got)
	}
	for _, c := range []*fakeNow{storeClock, behind, ahead} {
		c.add(time.Minute)
	}
	if got, _ := limitAfterRead(ctx, a, "k", 5); got != 5 {
		t.Errorf("after a quiet minute by the store's clock, the pod behind sees %d, want 5", got)
	}
}

// TestLearnerReadDoesNotUndoRefusal: a refresh that read the store before a
// refusal lowered the limit does not put the old limit back.
func TestLearnerReadDoesNotUndoRefusal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeNow{t: time.UnixMilli(1_790_000_000_000)}
	inner := newClockStore(clock)
	slow := &slowStore{clockStore: inner, loaded: make(chan struct{}), release: make(chan struct{})}
	l := NewLearner(slow, AIMD{}, time.Second)
	l.now = clock.now
	done := make(chan int)
	go func() {
		got, _ := l.Limit(ctx, "k", 5) // reads 5, then waits
		done <- got
	}()
	<-slow.loaded
	slow.mu.Lock()
	slow.pass = true
	slow.mu.Unlock()
	if ch, err := l.Refused(ctx, "k", 5, 5); err != nil || ch == nil || ch.To != 4 {
		t.Fatalf("Refused = %+v, %v", ch, err)
	}
	close(slow.release)
	<-done
	if got, ch := l.Limit(ctx, "k", 5); got != 4 || ch != nil {
		t.Errorf("after the slow read: %d, %+v; want 4 and no change", got, ch)
	}
}

// slowStore holds its first load until released.
type slowStore struct {
	*clockStore
	mu              sync.Mutex
	pass            bool
	loaded, release chan struct{}
}

func (s *slowStore) LoadLimit(ctx context.Context, key string) (Learned, time.Time, bool, error) {
	l, now, ok, err := s.clockStore.LoadLimit(ctx, key)
	s.mu.Lock()
	first := !s.pass
	s.mu.Unlock()
	if first {
		close(s.loaded)
		<-s.release
	}
	return l, now, ok, err
}

// failingStore fails every call.
type failingStore struct{}

func (failingStore) LoadLimit(context.Context, string) (Learned, time.Time, bool, error) {
	return Learned{}, time.Time{}, false, ErrUnavailable
}

func (failingStore) SwapLimit(context.Context, string, Learned, int) (Learned, bool, error) {
	return Learned{}, false, ErrUnavailable
}

// TestLearnerWithoutStore: when the store fails, a refusal still lowers the
// limit in this process, the error says the fleet was not told, and quiet
// periods by this process's clock raise it back.
func TestLearnerWithoutStore(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.UnixMilli(1_790_000_000_000)}
	l := NewLearner(failingStore{}, AIMD{}, time.Second)
	l.now = clock.now
	ctx := context.Background()
	if got, ch := l.Limit(ctx, "k", 5); got != 5 || ch != nil {
		t.Errorf("Limit = %d, %+v", got, ch)
	}
	ch, err := l.Refused(ctx, "k", 5, 5)
	if err == nil || ch == nil || ch.To != 4 {
		t.Errorf("Refused = %+v, %v; want 4 here and an error", ch, err)
	}
	clock.add(time.Second)
	if got, _ := limitAfterRead(ctx, l, "k", 5); got != 4 {
		t.Errorf("Limit after = %d, want 4", got)
	}
	clock.add(time.Minute)
	if got, ch := limitAfterRead(ctx, l, "k", 5); got != 5 || ch == nil || ch.From != 4 {
		t.Errorf("after a quiet minute without the store: %d, %+v; want 5", got, ch)
	}
}

// TestLearnerCallerGivesUp: a read cut short by the caller's context is no
// store failure: the limit is not raised by this process's clock for it.
func TestLearnerCallerGivesUp(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.UnixMilli(1_790_000_000_000)}
	store := newClockStore(clock)
	l := NewLearner(store, AIMD{}, time.Second)
	l.now = clock.now
	ctx := context.Background()
	if ch, err := l.Refused(ctx, "k", 5, 5); err != nil || ch == nil || ch.To != 4 {
		t.Fatalf("Refused = %+v, %v", ch, err)
	}
	l.mu.Lock()
	l.keys["k"].changed = clock.now().Add(-time.Hour) // as if lowered long ago here
	l.mu.Unlock()
	clock.add(time.Second)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if got, ch := l.Limit(gone, "k", 5); got != 4 || ch != nil {
		t.Errorf("Limit with a cancelled context = %d, %+v; want 4 and no change", got, ch)
	}
}

// TestLearnerFirstReadAwaited: callers of a key this process never read
// wait for the read under way, so that a process joining a fleet that
// learned a lower limit never runs at the configured one meanwhile; a
// caller that gives up while waiting goes with what is known.
func TestLearnerFirstReadAwaited(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.UnixMilli(1_790_000_000_000)}
	store := &slowStore{clockStore: newClockStore(clock), loaded: make(chan struct{}), release: make(chan struct{})}
	store.m["k"] = Learned{Limit: 2, Since: clock.now()}
	l := NewLearner(store, AIMD{}, time.Second)
	l.now = clock.now
	ctx := context.Background()
	first := make(chan int)
	go func() {
		got, _ := l.Limit(ctx, "k", 5)
		first <- got
	}()
	<-store.loaded
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if got, _ := l.Limit(gone, "k", 5); got != 5 {
		t.Errorf("a caller that gave up: %d, want the configured 5 (it sends nothing)", got)
	}
	second := make(chan int)
	go func() {
		got, _ := l.Limit(ctx, "k", 5)
		second <- got
	}()
	select {
	case got := <-second:
		t.Fatalf("a second caller went at %d during the first read", got)
	case <-time.After(50 * time.Millisecond):
	}
	close(store.release)
	if got := <-first; got != 2 {
		t.Errorf("the first caller: %d, want 2", got)
	}
	if got := <-second; got != 2 {
		t.Errorf("the caller that waited: %d, want 2", got)
	}
}

// TestLearnerRefreshRunsBehind: once a key was read, the read found due by
// a call runs behind it: the call goes on at once with the limit known,
// even while the store does not answer, and a call after the read tells
// what it changed.
func TestLearnerRefreshRunsBehind(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.UnixMilli(1_790_000_000_000)}
	store := &slowStore{clockStore: newClockStore(clock), pass: true, loaded: make(chan struct{}), release: make(chan struct{})}
	l := NewLearner(store, AIMD{}, time.Second)
	l.now = clock.now
	ctx := context.Background()
	if got, ch := l.Limit(ctx, "k", 5); got != 5 || ch != nil {
		t.Fatalf("first read: %d, %+v", got, ch)
	}
	store.mu.Lock()
	store.pass = false // the next load waits for release
	store.m["k"] = Learned{Limit: 2, Since: clock.now()}
	store.mu.Unlock()
	clock.add(time.Second)
	if got := limitDuringLoad(t, l, store, "the call that found a read due"); got != 5 {
		t.Errorf("the call that found a read due: %d, want the 5 known", got)
	}
	if got, ch := l.Limit(ctx, "k", 5); got != 5 || ch != nil {
		t.Errorf("a call during the read: %d, %+v; want the 5 known", got, ch)
	}
	store.open()
	got, ch := limitAfterRead(ctx, l, "k", 5)
	if got != 2 || ch == nil || ch.From != 5 || ch.To != 2 {
		t.Errorf("after the read: %d, %+v; want 2, told as a change from 5", got, ch)
	}
}

// limitDuringLoad calls l.Limit on "k" (configured 5), whose load store
// holds, and returns its answer; it fails, what naming the call, if the
// call waits for the store.
func limitDuringLoad(t *testing.T, l *Learner, store *slowStore, what string) int {
	t.Helper()
	got := make(chan int, 1)
	go func() {
		n, _ := l.Limit(context.Background(), "k", 5)
		got <- n
	}()
	<-store.loaded // the load is under way, held by the store
	select {
	case n := <-got:
		return n
	case <-time.After(30 * time.Second): // a bound on a hang, not a speed
		store.open()
		t.Fatalf("%s waited for the store", what)
		return 0
	}
}

// open lets the held load and every later one through.
func (s *slowStore) open() {
	s.mu.Lock()
	s.pass = true
	s.mu.Unlock()
	close(s.release)
}

// cappedSlowStore is a slowStore that says it caps acquisitions by what it
// stores (StoreCapped).
type cappedSlowStore struct{ *slowStore }

func (cappedSlowStore) CapsByStoredLimit() {}

// TestLearnerFirstReadBehindStoreCapped: on a StoreCapped store, a key's
// first callers do not wait for its first read (the store holds them to
// what it stores meanwhile); a call after the read tells its limit.
func TestLearnerFirstReadBehindStoreCapped(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: time.UnixMilli(1_790_000_000_000)}
	store := cappedSlowStore{&slowStore{clockStore: newClockStore(clock), loaded: make(chan struct{}), release: make(chan struct{})}}
	store.m["k"] = Learned{Limit: 2, Since: clock.now()}
	l := NewLearner(store, AIMD{}, time.Second)
	l.now = clock.now
	if got := limitDuringLoad(t, l, store.slowStore, "the first call"); got != 5 {
		t.Errorf("the first call: %d, want the configured 5 (the store caps it)", got)
	}
	store.open()
	if got, ch := limitAfterRead(context.Background(), l, "k", 5); got != 2 || ch == nil || ch.To != 2 {
		t.Errorf("after the read: %d, %+v; want 2, told as a change", got, ch)
	}
}

// cappedClockStore is a clockStore that says it caps acquisitions itself.
type cappedClockStore struct{ *clockStore }

func (cappedClockStore) CapsByStoredLimit() {}

// TestLearnerDefaultRefresh: by default a Learner reads a key again after a
// second, or after CappedRefresh on a StoreCapped store, which holds every
// acquisition to the stored limit itself.
func TestLearnerDefaultRefresh(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		capped bool
		every  time.Duration
	}{
		{"store", false, time.Second},
		{"StoreCapped", true, CappedRefresh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeNow{t: time.UnixMilli(1_790_000_000_000)}
			cs := newClockStore(clock)
			var store LimitStore = cs
			if tc.capped {
				store = cappedClockStore{cs}
			}
			l := NewLearner(store, AIMD{}, 0)
			l.now = clock.now
			ctx := context.Background()
			if got, _ := limitAfterRead(ctx, l, "k", 5); got != 5 {
				t.Fatalf("limit %d before anything was learned, want 5", got)
			}
			if _, ok, _ := cs.SwapLimit(ctx, "k", Learned{}, 3); !ok { // another process learned 3
				t.Fatal("SwapLimit refused")
			}
			clock.add(tc.every - time.Millisecond)
			if got, _ := limitAfterRead(ctx, l, "k", 5); got != 5 {
				t.Errorf("limit %d read again %s after the first read, want it not read yet (5)", got, tc.every-time.Millisecond)
			}
			clock.add(time.Millisecond)
			if got, _ := limitAfterRead(ctx, l, "k", 5); got != 3 {
				t.Errorf("limit %d %s after the first read, want the stored 3", got, tc.every)
			}
		})
	}
}
