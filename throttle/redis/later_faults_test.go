package redis

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
)

// releaseGate holds the release script: delay, or hang until its ctx ends
// (a Redis that does not answer).
type releaseGate struct {
	redistest.PassHooks
	sha   string
	delay atomic.Int64 // ns
	hang  atomic.Bool
	runs  atomic.Int64 // release scripts sent
	// down tells whether the backend deems Redis down; whileDown counts the
	// release scripts sent while it did.
	down      func() bool
	whileDown atomic.Int64
}

func (g *releaseGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && a[1] == g.sha {
			g.runs.Add(1)
			if g.down != nil && g.down() {
				g.whileDown.Add(1)
			}
			if g.hang.Load() {
				<-ctx.Done()
				return ctx.Err()
			}
			time.Sleep(time.Duration(g.delay.Load()))
		}
		return next(ctx, cmd)
	}
}

// releaseGated is a Redis backend on a client of its own whose release
// script a releaseGate holds.
func releaseGated(t *testing.T, opt Options) (*Backend, *redis.Client, *releaseGate) {
	t.Helper()
	shared := redistest.Single(t)
	opt.Prefix = redistest.Prefix(t, shared)
	rdb := redis.NewClient(&redis.Options{Addr: shared.(*redis.Client).Options().Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	b, err := newRedis(rdb, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	b.quietFor = time.Minute
	g := &releaseGate{sha: b.release.hash, down: b.isDown}
	rdb.AddHook(g)
	return b, rdb, g
}

// A release whose script is on its way (the timer took it) is awaited by an
// acquisition of its key from this process, which is not refused by its
// own released slot.
func TestRedisReleaseBeingSentIsAwaited(t *testing.T) {
	t.Parallel()
	b, _, g := releaseGated(t, Options{})
	r := throttle.Request{Key: "{c}/inflight", Concurrency: 1, TTL: time.Minute}
	l := mustTake(t, b, r)
	g.delay.Store(int64(200 * time.Millisecond)) // a slow round trip
	if err := b.Release(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * time.Millisecond) // the 20 ms timer fired; its script is in flight
	if _, err := b.TryAcquire(context.Background(), r); err != nil {
		t.Errorf("TryAcquire after Release returned nil: %v", err)
	}
}

// Close waits for a release whose script is on its way, so that the client
// closed after it does not lose the release (and hold the slot until its
// TTL).
func TestRedisCloseWaitsForReleasesBeingSent(t *testing.T) {
	t.Parallel()
	b, rdb, g := releaseGated(t, Options{})
	r := throttle.Request{Key: "{c}/close", Concurrency: 1, TTL: time.Minute}
	l := mustTake(t, b, r)
	g.delay.Store(int64(200 * time.Millisecond))
	if err := b.Release(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * time.Millisecond)
	_ = b.Close()
	_ = rdb.Close() // what a program does after Close
	time.Sleep(300 * time.Millisecond)
	other := redistest.Single(t)
	if n := countHolders(t, other, b.names(r.Key, nil)); n != 0 {
		t.Errorf("%d holders after Release and Close, want 0 (held until the TTL)", n)
	}
}

// While the release of a lease handed on locally (base~n) waits, the first
// holder's lease (base) is refused: a second Release and an Extend say
// ErrLeaseNotHeld.
func TestRedisReleasedLeaseRefusedWhileSuccessorsReleaseWaits(t *testing.T) {
	t.Parallel()
	b, _, _ := releaseGated(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{c}/stale", Concurrency: 1, TTL: time.Minute}
	first, next := handOnLocally(ctx, t, b, r)
	if err := b.Release(ctx, next); err != nil { // deferred
		t.Fatal(err)
	}
	if _, err := b.Extend(ctx, first, time.Minute); !errors.Is(err, throttle.ErrLeaseNotHeld) {
		t.Errorf("Extend of the first lease while its successor's release waits = %v, want ErrLeaseNotHeld", err)
	}
	if err := b.Release(ctx, first); !errors.Is(err, throttle.ErrLeaseNotHeld) {
		t.Errorf("second Release of the first lease = %v, want ErrLeaseNotHeld", err)
	}
}

// A Redis that hangs with releases pending: an acquisition of one of their
// keys gives up with its own context rather than wait a round trip's
// timeout per hash tag, and once a send fails (Redis marked down) the
// releases left are kept as orphans, not each tried for a round trip's
// timeout.
func TestRedisPendingReleasesRespectCtxAndOutage(t *testing.T) {
	t.Parallel()
	b, _, g := releaseGated(t, Options{OpTimeout: 500 * time.Millisecond})
	var ls []throttle.Lease
	for i := range 4 {
		ls = append(ls, mustTake(t, b, throttle.Request{Key: fmt.Sprintf("{t%d}/k", i), Concurrency: 1, TTL: time.Minute}))
	}
	g.hang.Store(true)
	_ = b.Release(context.Background(), ls[0])
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.TryAcquire(ctx, throttle.Request{Key: ls[0].Key, Concurrency: 1, TTL: time.Minute}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("TryAcquire while its key's release hangs = %v, want its own context's deadline", err)
	}
	for !b.isDown() { // the hung send marks Redis down
		time.Sleep(10 * time.Millisecond)
	}
	g.hang.Store(false)
	for b.isDown() {
		time.Sleep(10 * time.Millisecond)
	}
	g.hang.Store(true)
	g.runs.Store(0)
	for _, l := range ls[1:] {
		_ = b.Release(context.Background(), l)
	}
	_ = b.Close()
	// The first send hangs and fails, which marks Redis down; the rest are
	// kept, not tried. (A send that began while an earlier one still hung,
	// the linger timer's beside Close's on a slow machine, is no fault.)
	if n, down := g.runs.Load(), g.whileDown.Load(); n == 0 || down != 0 {
		t.Errorf("Close tried %d release scripts on a Redis that hangs, %d of them once it was known down; want at least one, none once down: the rest kept once the first failed", n, down)
	}
}

// A lease never released (its caller died) does not make a new head wait
// for a hand-over of this process once it has expired: holdsAll counts
// only the live leases, and says when the first of them expires.
func TestRedisHoldsAllForgetsExpiredLeases(t *testing.T) {
	t.Parallel()
	b, _, _ := releaseGated(t, Options{})
	r := throttle.Request{Key: "{c}/expired", Concurrency: 1, TTL: 500 * time.Millisecond}
	_ = mustTake(t, b, r) // never released
	holdsAll := func() (bool, time.Duration) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.holdsAll(r)
	}
	if all, until := holdsAll(); !all || until <= 0 || until > r.TTL {
		t.Fatalf("holdsAll = %v, expiring in %s, while the lease is live, want true within its TTL %s", all, until, r.TTL)
	}
	time.Sleep(r.TTL + 100*time.Millisecond) // past its expiry by the server's clock
	if all, _ := holdsAll(); all {
		t.Error("holdsAll = true for a lease that expired unreleased")
	}
}

// blockSwap lets a SwapLimit to 9 happen, then holds its caller.
type blockSwap struct {
	throttle.LimitStore
	swapped, open chan struct{}
}

func (s *blockSwap) SwapLimit(ctx context.Context, key string, prev throttle.Learned, next int) (throttle.Learned, bool, error) {
	st, ok, err := s.LimitStore.SwapLimit(ctx, key, prev, next)
	if next == 9 {
		close(s.swapped)
		<-s.open
	}
	return st, ok, err
}

// Two refusals: the first swaps 10 -> 9 and is slow to return, the second
// (a call granted under 9) swaps 9 -> 8. The first does not apply its
// older 9 over the 8, nor tell a refusal that raises the limit.
func TestLearnerRefusalNeverRaises(t *testing.T) {
	t.Parallel()
	s := &blockSwap{LimitStore: throttle.NewMemory(), swapped: make(chan struct{}), open: make(chan struct{})}
	l := throttle.NewLearner(s, throttle.AIMD{}, time.Hour)
	ctx := context.Background()
	done := make(chan *throttle.Change)
	go func() { ch, _ := l.Refused(ctx, "k", 10, 10); done <- ch }()
	<-s.swapped
	ch2, err := l.Refused(ctx, "k", 10, 9)
	t.Logf("second: %+v %v", ch2, err)
	close(s.open)
	ch1 := <-done
	t.Logf("first: %+v", ch1)
	if n, _ := l.Limit(ctx, "k", 10); n != 8 {
		t.Errorf("limit in force %d, want the store's 8", n)
	}
	if ch1 != nil && ch1.To > ch1.From {
		t.Errorf("a refusal told a rise: %+v", ch1)
	}
}

// BenchmarkHoldsAllManyKeys: holdsAll on one key while the process holds
// five leases on each of 200 keys (a provider's corps): it reads the key's
// own leases, not the 1,000.
func BenchmarkHoldsAllManyKeys(b *testing.B) {
	rdb := redistest.Single(b)
	be, err := newRedis(rdb, Options{Prefix: redistest.Prefix(b, rdb)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = be.Close() })
	expires := time.Now().Add(time.Hour)
	for k := range 200 {
		for i := range 5 {
			be.hold(be.era.Load(), throttle.Lease{Key: fmt.Sprintf("{c%d}/api", k), ID: fmt.Sprintf("l%d-%d", k, i), Expires: expires})
		}
	}
	r := throttle.Request{Key: "{c7}/api", Concurrency: 5, TTL: time.Minute}
	be.mu.Lock()
	defer be.mu.Unlock()
	be.hotOf(r.Key).quiet = expires // as after an answer that no other process waits
	if all, _ := be.holdsAll(r); !all {
		b.Fatal("holdsAll = false for a key whose five slots this process holds")
	}
	for b.Loop() {
		be.holdsAll(r)
	}
}
