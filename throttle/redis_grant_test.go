package throttle

// Grants across processes sharing a key: processes take turns, a hand-over
// that yields grants another process the slot in its own round trip, past
// processes gone, and a slot nobody can use goes back; and the parsing of a
// grant message.

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
)

// Processes sharing a key take turns: a process whose waiters keep asking
// cannot keep its slots to itself while another process waits. Two backends
// on one Redis (two processes, as far as the backend can tell) saturate a
// key; each gets a fair part of the grants, however lopsided their numbers
// of waiters: through Redis (the protocol), and with the hot path, where a
// process hands its slots on locally until it learns that another waits.
// With the hot path, a process learns that another waits from a notice,
// and stops handing its slots on locally; an answer that none waits lets it
// hand them on for quietFor (localSpan, 200 ms). This test's whole run
// lasts about that long, so one late notice under a loaded machine's
// scheduling would decide it: the hot variants run with a 10 ms span, the
// mechanism unchanged.
func TestRedisProcessesTakeTurns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		workers     [2]int
		minShareOf1 float64
		hot         bool
	}{
		{"4 against 4", [2]int{4, 4}, 0.35, false},
		{"1 against 8", [2]int{1, 8}, 0.20, false},
		{"hot path, 4 against 4", [2]int{4, 4}, 0.35, true},
		{"hot path, 1 against 8", [2]int{1, 8}, 0.20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs := twoProcesses(t)
			for _, b := range bs {
				b.cold, b.quietFor = !tc.hot, 10*time.Millisecond
				subscribed(t, b)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := Request{Key: "turns", Concurrency: 2, TTL: 30 * time.Second}
			const total = 400
			grants := takeTurns(ctx, t, bs, tc.workers, r, total)
			share := float64(grants[0]) / total
			t.Logf("grants: process 1 (%d waiters) %d, process 2 (%d waiters) %d: share of process 1 %.0f%%",
				tc.workers[0], grants[0], tc.workers[1], grants[1], 100*share)
			if share < tc.minShareOf1 {
				t.Fatalf("process 1 got %.0f%% of the grants, want at least %.0f%%", 100*share, 100*tc.minShareOf1)
			}
			// (deferred releases reach Redis within milliseconds)
			n := holders(t, bs[0], r.Key)
			for give := time.Now().Add(5 * time.Second); n != 0 && time.Now().Before(give); n = holders(t, bs[0], r.Key) {
				time.Sleep(10 * time.Millisecond)
			}
			if n != 0 {
				t.Fatalf("%d leases left", n)
			}
		})
	}
}

// twoProcesses returns two Redis backends on one client under a fresh
// prefix: two processes, as far as the backends can tell.
func twoProcesses(t *testing.T) [2]*Redis {
	t.Helper()
	rdb := redistest.Single(t)
	prefix := redistest.Prefix(t, rdb)
	var bs [2]*Redis
	for i := range bs {
		b, err := newRedis(rdb, RedisOptions{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		b.cold = true // the protocol between processes, as when they contend
		bs[i] = b
	}
	return bs
}

// takeTurns runs workers[p] waiters on bs[p], each acquiring r, holding it a
// moment and releasing it, until total grants are counted; it returns the
// grants counted for each process.
func takeTurns(ctx context.Context, t *testing.T, bs [2]*Redis, workers [2]int, r Request, total int) [2]int {
	t.Helper()
	var (
		mu     sync.Mutex
		grants [2]int
		wg     sync.WaitGroup
		errs   = make(chan error, 16)
	)
	for p, b := range bs {
		for range workers[p] {
			wg.Go(func() {
				for {
					l, err := b.Acquire(ctx, r)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					done := grants[0]+grants[1] >= total
					if !done {
						grants[p]++
					}
					mu.Unlock()
					time.Sleep(time.Millisecond) // the call
					if err := b.Release(ctx, l); err != nil {
						errs <- err
						return
					}
					if done {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return grants
}

// A hand-over that yields to a process that has waited longer grants that
// process the slot in its own round trip: the other process's waiter starts
// without asking Redis again, and the yielding process stays queued, its
// waiter served by the next release.
func TestRedisGrantsAcrossProcesses(t *testing.T) {
	t.Parallel()
	bs, gs := gatedBackends(t, 2)
	a, b := bs[0], bs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := Request{Key: "grant", Concurrency: 1, TTL: 30 * time.Second,
		Windows: []Window{{Limit: 1000, Period: time.Minute}}}
	h, err := a.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	bw := acquireAsync(ctx, b, r) // b waits first
	headRefused(t, b, r.Key)
	aw := acquireAsync(ctx, a, r)
	headRefused(t, a, r.Key)
	if got, want := waitingProcs(t, a, r.Key), []string{b.proc, a.proc}; !slices.Equal(got, want) {
		t.Fatalf("waiting processes %v, want %v", got, want)
	}
	bAsks, _ := gs[1].counts()

	if err := a.Release(ctx, h); err != nil { // a hand-over that yields to b
		t.Fatalf("Release: %v", err)
	}
	got := <-bw
	if got.err != nil {
		t.Fatalf("b: %v", got.err)
	}
	checkGrantServed(t, a, gs, bAsks, aw, r.Key)
	// b has no other waiter: it leaves the queue (after handing the lease to
	// its waiter, so this may take a moment); a stays queued.
	waitProcsQueued(t, a, r.Key, []string{a.proc})

	if err := b.Release(ctx, got.l); err != nil { // wakes a
		t.Fatalf("Release: %v", err)
	}
	res := <-aw
	if res.err != nil {
		t.Fatalf("a: %v", res.err)
	}
	if err := a.Release(ctx, res.l); err != nil {
		t.Fatal(err)
	}
	if n := holders(t, a, r.Key); n != 0 {
		t.Fatalf("%d leases left", n)
	}
	if n := windowTotal(t, a, r, time.Minute); n != 3 {
		t.Fatalf("the window counts %d acquisitions, want 3", n)
	}
}

// checkGrantServed checks that a's hand-over granted b (gs[1]) the slot of
// key without b asking Redis again after bAsks asks, and that a's waiter aw
// is still waiting.
func checkGrantServed(t *testing.T, a *Redis, gs []*acquireGate, bAsks int, aw <-chan acquired, key string) {
	t.Helper()
	if asks, _ := gs[1].counts(); asks != bAsks {
		t.Fatalf("b asked Redis %d more times; the grant should have served it", asks-bAsks)
	}
	if _, handovers := gs[0].counts(); handovers != 1 {
		t.Fatalf("a: %d hand-overs, want 1", handovers)
	}
	select {
	case res := <-aw:
		t.Fatalf("a's waiter got %+v while b holds the only slot", res)
	default:
	}
	if n := holders(t, a, key); n != 1 {
		t.Fatalf("%d leases held, want 1", n)
	}
}

// waitProcsQueued waits, bounded, until the processes queued in Redis for
// key are want.
func waitProcsQueued(t *testing.T, b *Redis, key string, want []string) {
	t.Helper()
	for i := 0; ; i++ {
		got := waitingProcs(t, b, key)
		if slices.Equal(got, want) {
			break
		}
		if i == 5000 {
			t.Fatalf("waiting processes %v, want %v", got, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// A grant goes past queued processes that no longer listen (a process that
// died): each is dropped from the queue, and with nobody else waiting the
// releasing process's own waiter gets the slot.
func TestRedisGrantSkipsProcessesGone(t *testing.T) {
	t.Parallel()
	a, g := gatedBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := Request{Key: "ghosts", Concurrency: 1, TTL: 30 * time.Second}
	h, err := a.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	q := a.names(r.Key, nil).waiting
	if err := client(a).ZAdd(ctx, q, redis.Z{Score: 1, Member: "ghost-1"}, redis.Z{Score: 2, Member: "ghost-2"}).Err(); err != nil {
		t.Fatal(err)
	}
	aw := acquireAsync(ctx, a, r)
	headRefused(t, a, r.Key)
	if err := a.Release(ctx, h); err != nil {
		t.Fatalf("Release: %v", err)
	}
	res := <-aw
	if res.err != nil {
		t.Fatalf("waiter: %v", res.err)
	}
	if _, handovers := g.counts(); handovers != 1 {
		t.Fatalf("%d hand-overs, want 1", handovers)
	}
	if ps := waitingProcs(t, a, r.Key); len(ps) != 0 {
		t.Fatalf("still queued: %v", ps)
	}
	if err := a.Release(ctx, res.l); err != nil {
		t.Fatal(err)
	}
	if n := holders(t, a, r.Key); n != 0 {
		t.Fatalf("%d leases left", n)
	}
}

// A process granted a slot it cannot use gives it back, its window count
// refunded, and the slot goes on: here b is queued with no waiter left (its
// waiter left without taking a turn), and then with a waiter whose limits
// differ from those the slot was granted under.
func TestRedisGrantNobodyCanUseGoesBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		bWaiter  bool // b has a waiter, with other limits than a's
		wantCnts int  // acquisitions the window counts at the end
	}{
		{"no waiter", false, 2},
		{"other limits", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs, _ := gatedBackends(t, 2)
			a, b := bs[0], bs[1]
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r := Request{Key: "unusable", Concurrency: 1, TTL: 30 * time.Second,
				Windows: []Window{{Limit: 1000, Period: time.Minute}}}
			h, err := a.TryAcquire(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			bw := queueUnusable(ctx, t, b, r, tc.bWaiter)
			aw := acquireAsync(ctx, a, r)
			headRefused(t, a, r.Key)

			if err := a.Release(ctx, h); err != nil { // grants b, which gives back
				t.Fatalf("Release: %v", err)
			}
			res := <-aw // woken by b's give-back
			if res.err != nil {
				t.Fatalf("a: %v", res.err)
			}
			if err := a.Release(ctx, res.l); err != nil {
				t.Fatal(err)
			}
			if bw != nil {
				releaseUnusableWaiter(ctx, t, b, bw)
			}
			if n := holders(t, a, r.Key); n != 0 {
				t.Fatalf("%d leases left", n)
			}
			if n := windowTotal(t, a, r, time.Minute); n != tc.wantCnts {
				t.Fatalf("the window counts %d acquisitions, want %d (the grant given back refunded)", n, tc.wantCnts)
			}
		})
	}
}

// queueUnusable queues process b for r's key: with a waiter whose limits
// differ from r's (returned), or, without one, as a process whose waiter
// left without taking its turn (nil returned).
func queueUnusable(ctx context.Context, t *testing.T, b *Redis, r Request, withWaiter bool) <-chan acquired {
	t.Helper()
	if !withWaiter {
		if err := client(b).ZAdd(ctx, b.names(r.Key, nil).waiting, redis.Z{Score: 1, Member: b.proc}).Err(); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	rb := r
	rb.Windows = []Window{{Limit: 999, Period: time.Minute}}
	bw := acquireAsync(ctx, b, rb)
	headRefused(t, b, r.Key)
	return bw
}

// releaseUnusableWaiter waits for b's waiter bw and releases its lease.
func releaseUnusableWaiter(ctx context.Context, t *testing.T, b *Redis, bw <-chan acquired) {
	t.Helper()
	got := <-bw
	if got.err != nil {
		t.Fatalf("b: %v", got.err)
	}
	if err := b.Release(ctx, got.l); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseGrant(f *testing.F) {
	f.Add("{corp}/cgi-bin/externalcontact/mark_tag\n0a1b2c\n1700000000000\n1700000015000\n5\n15000\n10000\n60000\n150000\n3600000")
	f.Add("key\nid\n1\n2\n1\n1")
	f.Add("key\nid")
	f.Add("\n\n\n")
	f.Add("{corp}/cgi-bin/externalcontact/mark_tag\n0a1b2c\n1700000000000\n1700000015000\n5\n15000\n1\n10000\n60000\nw\n{corp}@customer-edit|u1|c1\n0a1b2c.1\n1\n60000")
	f.Add("key\nid\n1\n2\n1\n1\n1\nw\nw\nid.1\n1\n1\nx\nid.2\n2\n5")
	f.Add("key\nid\n1\n2\n1\n1\n1\nw\nkey\nid.1\n1")
	f.Fuzz(func(t *testing.T, msg string) {
		g, err := parseGrant(msg)
		if err != nil {
			return
		}
		if err := g.req.Validate(); err != nil {
			t.Fatalf("%q parsed to an invalid request: %v", msg, err)
		}
		if g.lease.Key != g.req.Key || g.lease.ID == "" || !g.lease.HoldsSlot() || g.lease.Expires.Before(g.lease.Granted) || len(g.lease.With) > 0 {
			t.Fatalf("%q parsed to lease %+v", msg, g.lease)
		}
		if g.req.Concurrency <= 0 || strings.Contains(g.req.Key, "\n") || len(g.req.With) > 0 {
			t.Fatalf("%q parsed to %+v", msg, g.req)
		}
	})
}

// TestRedisMalformedGrantReleased: a grant that does not parse still
// releases the slot it names: one missing a window's period, and one with
// the With section an earlier version sent.
func TestRedisMalformedGrantReleased(t *testing.T) {
	t.Parallel()
	for _, tail := range []string{"\n10000", "\n10000\n60000\nw\n{corp}@l\nid.1\n1\n60000"} {
		bs, _ := gatedBackends(t, 2)
		a, b := bs[0], bs[1]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l := mustTake(t, a, Request{Key: "{corp}/m", Concurrency: 1, TTL: time.Minute})
		msg := l.Key + "\n" + l.ID + "\n1000\n61000\n1\n60000\n1" + tail
		if err := client(a).Publish(ctx, b.wakePrefix+b.proc, msg).Err(); err != nil {
			t.Fatal(err)
		}
		for i := 0; holders(t, a, l.Key) > 0; i++ {
			if i == 5000 {
				t.Fatalf("the slot a malformed grant (%q) names is still held", tail)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
