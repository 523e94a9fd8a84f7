package redis

// Processes sharing a key: they take turns, a hand-over yields to a process
// that has waited longer (past processes gone), and a process woken for a
// key it no longer waits on passes the wake-up on.

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
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
// mechanism unchanged. With the hot path a slot also goes on locally for
// localTurns turns (within that span) before it is yielded, so the lone
// waiter of one against eight gets about its waiters' share of the calls
// (1 in 9), not its process's half: measured 9-11% with 7 turns (22-30%
// with 1); its floor is 6%, where a waiter kept out for more than its
// turns would fall. The turns also halve the scripts: a pass between the
// processes costs two (the yield and the woken process's ask) and serves
// up to localTurns + 1 calls; measured 0.94-1.10 scripts a grant with 7
// turns, 1.80-1.97 with none.
func TestRedisProcessesTakeTurns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		workers     [2]int
		minShareOf1 float64
		hot         bool
		maxScripts  float64 // a grant, on average (0: not checked)
	}{
		{"4 against 4", [2]int{4, 4}, 0.35, false, 0},
		{"1 against 8", [2]int{1, 8}, 0.20, false, 0},
		{"hot path, 4 against 4", [2]int{4, 4}, 0.35, true, 1.5},
		{"hot path, 1 against 8", [2]int{1, 8}, 0.06, true, 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A run's share is a sample of a real-time race: on a machine
			// saturated by other work (a cold `go test ./...` compiling
			// beside it) the hot path's lone waiter once got 3%. A share
			// under the floor is measured again, on new backends, and the
			// second must reach it.
			for run := 1; ; run++ {
				share := turnsShare(t, tc.workers, tc.hot, tc.maxScripts)
				if share >= tc.minShareOf1 {
					break
				}
				if run == 2 {
					t.Fatalf("process 1 got %.0f%% of the grants twice running, want at least %.0f%%", 100*share, 100*tc.minShareOf1)
				}
				t.Logf("process 1 got %.0f%% of the grants, under %.0f%%: measuring again", 100*share, 100*tc.minShareOf1)
			}
		})
	}
}

// turnsShare runs workers[p] waiters on each of two new processes sharing
// a key of 2 slots until 800 grants, checks the scripts a grant (at most
// maxScripts, unless 0) and that no lease is left, and returns the share
// of process 1.
func turnsShare(t *testing.T, workers [2]int, hot bool, maxScripts float64) float64 {
	t.Helper()
	bs, scripts := twoProcesses(t)
	for _, b := range bs {
		b.cold, b.quietFor = !hot, 10*time.Millisecond
		subscribed(t, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := throttle.Request{Key: "turns", Concurrency: 2, TTL: 30 * time.Second}
	const total = 800 // a share's spread: about 1.5 points at 26%
	grants := takeTurns(ctx, t, bs, workers, r, total)
	share := float64(grants[0]) / total
	perGrant := float64(scripts.runs()) / total
	t.Logf("grants: process 1 (%d waiters) %d, process 2 (%d waiters) %d: share of process 1 %.0f%%; %.2f scripts a grant",
		workers[0], grants[0], workers[1], grants[1], 100*share, perGrant)
	if maxScripts > 0 && perGrant > maxScripts {
		t.Errorf("%.2f scripts a grant, want at most %.1f: a pass between processes serves the slot's local turns", perGrant, maxScripts)
	}
	// (deferred releases reach Redis within milliseconds)
	n := holders(t, bs[0], r.Key)
	for give := time.Now().Add(5 * time.Second); n != 0 && time.Now().Before(give); n = holders(t, bs[0], r.Key) {
		time.Sleep(10 * time.Millisecond)
	}
	if n != 0 {
		t.Fatalf("%d leases left", n)
	}
	return share
}

// twoProcesses returns two Redis backends on one client under a fresh
// prefix (two processes, as far as the backends can tell), and the counter
// of the scripts they run.
func twoProcesses(t *testing.T) ([2]*Backend, *scriptCounter) {
	t.Helper()
	rdb := redistest.Single(t)
	scripts := &scriptCounter{}
	rdb.AddHook(scripts)
	prefix := redistest.Prefix(t, rdb)
	var bs [2]*Backend
	for i := range bs {
		b, err := newRedis(rdb, Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		b.cold = true // the protocol between processes, as when they contend
		bs[i] = b
	}
	return bs, scripts
}

// takeTurns runs workers[p] waiters on bs[p], each acquiring r, holding it a
// moment and releasing it, until total grants are counted; it returns the
// grants counted for each process.
func takeTurns(ctx context.Context, t *testing.T, bs [2]*Backend, workers [2]int, r throttle.Request, total int) [2]int {
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

// A hand-over that yields to a process that has waited longer frees the
// slot and wakes that process, which asks for it itself; the yielding
// process stays queued, its waiter served by the next release.
func TestRedisHandOverYieldsToProcess(t *testing.T) {
	t.Parallel()
	bs, gs := gatedBackends(t, 2)
	a, b := bs[0], bs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := throttle.Request{Key: "yield", Concurrency: 1, TTL: 30 * time.Second,
		Windows: []throttle.Window{{Limit: 1000, Period: time.Minute}}}
	h, err := a.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	bw := acquireAsync(ctx, b, r) // b waits first
	headRefused(t, b, r.Key)
	afterArrival(t, a, r.Key, b.proc)
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
	if asks, _ := gs[1].counts(); asks <= bAsks {
		t.Fatal("b was served without asking Redis")
	}
	if _, handovers := gs[0].counts(); handovers != 1 {
		t.Fatalf("a: %d hand-overs, want 1", handovers)
	}
	select {
	case res := <-aw:
		t.Fatalf("a's waiter got %+v while b holds the only slot", res)
	default:
	}
	if n := holders(t, a, r.Key); n != 1 {
		t.Fatalf("%d leases held, want 1", n)
	}
	if got, want := waitingProcs(t, a, r.Key), []string{a.proc}; !slices.Equal(got, want) {
		t.Fatalf("waiting processes %v, want %v", got, want)
	}

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

// A hand-over that yields to queued processes that no longer listen (a
// process that died) wakes nobody; the releasing process's own waiter
// still gets the slot, asking for it once its wait ends.
func TestRedisYieldPastProcessesGone(t *testing.T) {
	t.Parallel()
	a, g := gatedBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := throttle.Request{Key: "ghosts", Concurrency: 1, TTL: 30 * time.Second}
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
	if err := a.Release(ctx, res.l); err != nil {
		t.Fatal(err)
	}
	if n := holders(t, a, r.Key); n != 0 {
		t.Fatalf("%d leases left", n)
	}
}

// A process woken for a key that none of its waiters waits on any more (b,
// queued, its waiter gone without taking its turn) passes the wake-up on
// to the next process, whose waiter then takes the slot.
func TestRedisWokenProcessPassesOn(t *testing.T) {
	t.Parallel()
	bs, gs := gatedBackends(t, 2)
	a, b := bs[0], bs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := throttle.Request{Key: "passon", Concurrency: 1, TTL: 30 * time.Second,
		Windows: []throttle.Window{{Limit: 1000, Period: time.Minute}}}
	h, err := a.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := client(b).ZAdd(ctx, b.names(r.Key, nil).waiting, redis.Z{Score: 1, Member: b.proc}).Err(); err != nil {
		t.Fatal(err)
	}
	aw := acquireAsync(ctx, a, r)
	headRefused(t, a, r.Key)
	bScripts := gs[1].scriptCount()

	if err := a.Release(ctx, h); err != nil { // yields to b, which passes on
		t.Fatalf("Release: %v", err)
	}
	res := <-aw
	if res.err != nil {
		t.Fatalf("a: %v", res.err)
	}
	// a's head may be served by its resync timer before b's pass-on, the
	// wake-up late under load; b passes it on all the same.
	eventually(t, "b passing the wake-up on (a script of b's)", func() bool { return gs[1].scriptCount() > bScripts })
	if err := a.Release(ctx, res.l); err != nil {
		t.Fatal(err)
	}
	if n := holders(t, a, r.Key); n != 0 {
		t.Fatalf("%d leases left", n)
	}
	if n := windowTotal(t, a, r, time.Minute); n != 2 {
		t.Fatalf("the window counts %d acquisitions, want 2", n)
	}
}
