package throttle

// Hand-overs inside one process, tested with a view of the local queue (so
// that "the waiter has queued" is a state, not a sleep) and a go-redis hook
// that holds a head's own round trip while a Release runs.

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

// acquireGate is a go-redis hook on the acquire script. It counts the calls
// by kind (a head asking for itself, or a hand-over that releases a lease
// first) and, when armed, holds the next head's call until opened.
type acquireGate struct {
	sha string

	mu        sync.Mutex
	asks      int           // acquire calls with no lease to release
	handovers int           // acquire calls that release a lease first
	armed     bool          // hold the next ask
	held      chan struct{} // closed when an ask is being held
	open      chan struct{} // closing it lets the held ask go
}

func newAcquireGate(sha string) *acquireGate {
	return &acquireGate{sha: sha, held: make(chan struct{}), open: make(chan struct{})}
}

func (g *acquireGate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *acquireGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (g *acquireGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) < 3 || args[1] != g.sha && args[1] != clockSource(freeLua+acquireLua) {
			return next(ctx, cmd)
		}
		// eval[sha] script numkeys KEYS... ARGV...: ARGV[6] is the lease to
		// release.
		nkeys, _ := args[2].(int)
		release, _ := args[3+nkeys+5].(string)
		g.mu.Lock()
		hold := release == "" && g.armed
		if hold {
			g.armed = false
		}
		g.mu.Unlock()
		if hold {
			close(g.held)
			<-g.open
		}
		err := next(ctx, cmd)
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			return err // EVAL follows
		}
		g.mu.Lock()
		if release == "" {
			g.asks++
		} else {
			g.handovers++
		}
		g.mu.Unlock()
		return err
	}
}

func (g *acquireGate) counts() (asks, handovers int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.asks, g.handovers
}

// gatedBackend returns a Redis backend whose client carries a gate on the
// acquire script, under a fresh prefix.
func gatedBackend(t *testing.T) (*Redis, *acquireGate) {
	t.Helper()
	bs, gs := gatedBackends(t, 1)
	return bs[0], gs[0]
}

// gatedBackends returns n Redis backends under one fresh prefix, each with
// its own client and gate: n processes, as far as the backends can tell.
func gatedBackends(t *testing.T, n int) ([]*Redis, []*acquireGate) {
	t.Helper()
	shared := redistest.Single(t)
	opt := shared.(*redis.Client).Options()
	prefix := redistest.Prefix(t, shared)
	var (
		bs []*Redis
		gs []*acquireGate
	)
	for range n {
		rdb := redis.NewClient(&redis.Options{Addr: opt.Addr})
		t.Cleanup(func() { _ = rdb.Close() })
		b, err := NewRedis(rdb, RedisOptions{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		g := newAcquireGate(b.acquire.Hash())
		rdb.AddHook(g)
		bs, gs = append(bs, b), append(gs, g)
	}
	return bs, gs
}

// subscribed waits until b's subscription is in place, so that a grant
// published to it reaches it.
func subscribed(t *testing.T, b *Redis) {
	t.Helper()
	ch := b.wakePrefix + b.proc
	for range 5000 {
		n, err := b.rdb.PubSubNumSub(context.Background(), ch).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n[ch] > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("backend %s never subscribed", b.proc)
}

// waitingProcs returns the processes queued in Redis for key, first first.
func waitingProcs(t *testing.T, b *Redis, key string) []string {
	t.Helper()
	ps, err := b.rdb.ZRange(context.Background(), b.names(key, nil).waiting, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// windowTotal returns how many acquisitions the window of r with period p
// counts now.
func windowTotal(t *testing.T, b *Redis, r Request, p time.Duration) int {
	t.Helper()
	for i, w := range r.Windows {
		if w.Period == p {
			n, err := b.rdb.HGet(context.Background(), b.names(r.Key, r.Windows).windows[i], "t").Int()
			if err != nil && err != redis.Nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no window of %s", p)
	return 0
}

// queued waits until key has n local waiters.
func queued(t *testing.T, b *Redis, key string, n int) {
	t.Helper()
	for range 5000 {
		b.mu.Lock()
		k := b.keys[key]
		got := 0
		if k != nil {
			got = k.queue.Len()
		}
		b.mu.Unlock()
		if got == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("key %q never had %d waiters", key, n)
}

// headRefused waits until the head of key has been refused and is waiting.
func headRefused(t *testing.T, b *Redis, key string) {
	t.Helper()
	for range 5000 {
		b.mu.Lock()
		k := b.keys[key]
		ok := k != nil && k.refused != nil && k.queue.Len() > 0 && !k.queue.Front().Value.(*rwaiter).busy
		b.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the head of %q was never refused", key)
}

type acquired struct {
	l   Lease
	err error
}

func acquireAsync(ctx context.Context, b *Redis, r Request) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := b.Acquire(ctx, r)
		ch <- acquired{l, err}
	}()
	return ch
}

func holders(t *testing.T, b *Redis, key string) int64 {
	t.Helper()
	n, err := b.rdb.ZCard(context.Background(), b.names(key, nil).holders).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A Release hands its slot to the first waiter that can take it: while the
// head is in a round trip of its own, the next waiter gets the slot, in the
// release's round trip.
func TestRedisHandsOverPastABusyHead(t *testing.T) {
	b, g := gatedBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := Request{Key: "busy-head", Concurrency: 1, TTL: 30 * time.Second}
	h, err := b.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}

	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
	a := acquireAsync(ctx, b, r) // the head: its ask is held in the hook
	<-g.held
	second := acquireAsync(ctx, b, r)
	queued(t, b, r.Key, 2)

	if err := b.Release(ctx, h); err != nil {
		t.Fatalf("Release: %v", err)
	}
	got := <-second
	if got.err != nil {
		t.Fatalf("second waiter: %v", got.err)
	}
	select {
	case res := <-a:
		t.Fatalf("the head returned %+v while its ask was held", res)
	default:
	}
	if _, handovers := g.counts(); handovers != 1 {
		t.Fatalf("hand-overs = %d, want 1", handovers)
	}

	close(g.open) // the head's ask: refused, the second waiter holds the slot
	headRefused(t, b, r.Key)
	if err := b.Release(ctx, got.l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	res := <-a
	if res.err != nil {
		t.Fatalf("head: %v", res.err)
	}
	if err := b.Release(ctx, res.l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if n := holders(t, b, r.Key); n != 0 {
		t.Fatalf("%d leases left", n)
	}
}

// A chain of waiters in one process is served by hand-overs alone: after the
// first head's refusal, each release hands its slot to the next waiter in the
// same round trip, and a new head does not ask Redis first.
func TestRedisChainOfHandOvers(t *testing.T) {
	b, g := gatedBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := Request{Key: "chain", Concurrency: 1, TTL: 30 * time.Second,
		Windows: []Window{{Limit: 1000, Period: time.Minute}}}
	h, err := b.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	var waiters []<-chan acquired
	for i := range n {
		waiters = append(waiters, acquireAsync(ctx, b, r))
		queued(t, b, r.Key, i+1) // in this order
	}
	headRefused(t, b, r.Key)
	asks0, _ := g.counts()

	prev := h
	for i, w := range waiters {
		if err := b.Release(ctx, prev); err != nil {
			t.Fatalf("Release %d: %v", i, err)
		}
		got := <-w // arrival order: the waiter queued i-th is served i-th
		if got.err != nil {
			t.Fatalf("waiter %d: %v", i, got.err)
		}
		prev = got.l
		// Let the new head reach its wait (an ask it wrongly sent would be
		// counted; a slow machine can only hide one, never invent one).
		time.Sleep(20 * time.Millisecond)
	}
	if err := b.Release(ctx, prev); err != nil {
		t.Fatal(err)
	}
	asks, handovers := g.counts()
	if asks != asks0 || handovers != n {
		t.Fatalf("after the first refusal: %d asks, %d hand-overs; want 0 asks and %d hand-overs", asks-asks0, handovers, n)
	}
	if n := holders(t, b, r.Key); n != 0 {
		t.Fatalf("%d leases left", n)
	}
}

// Processes sharing a key take turns: a process whose waiters keep asking
// cannot keep its slots to itself while another process waits. Two backends
// on one Redis (two processes, as far as the backend can tell) saturate a
// key; each gets a fair part of the grants, however lopsided their numbers
// of waiters.
func TestRedisProcessesTakeTurns(t *testing.T) {
	for _, tc := range []struct {
		name        string
		workers     [2]int
		minShareOf1 float64
	}{
		{"4 against 4", [2]int{4, 4}, 0.35},
		{"1 against 8", [2]int{1, 8}, 0.20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := redistest.Single(t)
			prefix := redistest.Prefix(t, rdb)
			var bs [2]*Redis
			for i := range bs {
				b, err := NewRedis(rdb, RedisOptions{Prefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Close() })
				bs[i] = b
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := Request{Key: "turns", Concurrency: 2, TTL: 30 * time.Second}
			const total = 400
			var (
				mu     sync.Mutex
				grants [2]int
				wg     sync.WaitGroup
				errs   = make(chan error, 16)
			)
			for p, b := range bs {
				for range tc.workers[p] {
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
			share := float64(grants[0]) / total
			t.Logf("grants: process 1 (%d waiters) %d, process 2 (%d waiters) %d: share of process 1 %.0f%%",
				tc.workers[0], grants[0], tc.workers[1], grants[1], 100*share)
			if share < tc.minShareOf1 {
				t.Fatalf("process 1 got %.0f%% of the grants, want at least %.0f%%", 100*share, 100*tc.minShareOf1)
			}
			if n := holders(t, bs[0], r.Key); n != 0 {
				t.Fatalf("%d leases left", n)
			}
		})
	}
}

// A hand-over that yields to a process that has waited longer grants that
// process the slot in its own round trip: the other process's waiter starts
// without asking Redis again, and the yielding process stays queued, its
// waiter served by the next release.
func TestRedisGrantsAcrossProcesses(t *testing.T) {
	bs, gs := gatedBackends(t, 2)
	a, b := bs[0], bs[1]
	subscribed(t, a)
	subscribed(t, b)
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
	if n := holders(t, a, r.Key); n != 1 {
		t.Fatalf("%d leases held, want 1", n)
	}
	// b has no other waiter: it leaves the queue (after handing the lease to
	// its waiter, so this may take a moment); a stays queued.
	for i := 0; ; i++ {
		got, want := waitingProcs(t, a, r.Key), []string{a.proc}
		if slices.Equal(got, want) {
			break
		}
		if i == 5000 {
			t.Fatalf("waiting processes %v, want %v", got, want)
		}
		time.Sleep(time.Millisecond)
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

// A grant goes past queued processes that no longer listen (a process that
// died): each is dropped from the queue, and with nobody else waiting the
// releasing process's own waiter gets the slot.
func TestRedisGrantSkipsProcessesGone(t *testing.T) {
	a, g := gatedBackend(t)
	subscribed(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := Request{Key: "ghosts", Concurrency: 1, TTL: 30 * time.Second}
	h, err := a.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	q := a.names(r.Key, nil).waiting
	if err := a.rdb.ZAdd(ctx, q, redis.Z{Score: 1, Member: "ghost-1"}, redis.Z{Score: 2, Member: "ghost-2"}).Err(); err != nil {
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
			subscribed(t, a)
			subscribed(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r := Request{Key: "unusable", Concurrency: 1, TTL: 30 * time.Second,
				Windows: []Window{{Limit: 1000, Period: time.Minute}}}
			h, err := a.TryAcquire(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			var bw <-chan acquired
			if tc.bWaiter {
				rb := r
				rb.Windows = []Window{{Limit: 999, Period: time.Minute}}
				bw = acquireAsync(ctx, b, rb)
				headRefused(t, b, r.Key)
			} else if err := b.rdb.ZAdd(ctx, b.names(r.Key, nil).waiting, redis.Z{Score: 1, Member: b.proc}).Err(); err != nil {
				t.Fatal(err)
			}
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
				got := <-bw
				if got.err != nil {
					t.Fatalf("b: %v", got.err)
				}
				if err := b.Release(ctx, got.l); err != nil {
					t.Fatal(err)
				}
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

func FuzzParseGrant(f *testing.F) {
	f.Add("{corp}/cgi-bin/externalcontact/mark_tag\n0a1b2c\n1700000000000\n1700000015000\n5\n15000\n10000\n60000\n150000\n3600000")
	f.Add("key\nid\n1\n2\n1\n1")
	f.Add("key\nid")
	f.Add("\n\n\n")
	f.Fuzz(func(t *testing.T, msg string) {
		g, err := parseGrant(msg)
		if err != nil {
			return
		}
		if err := g.req.Validate(); err != nil {
			t.Fatalf("%q parsed to an invalid request: %v", msg, err)
		}
		if g.lease.Key != g.req.Key || g.lease.ID == "" || !g.lease.HoldsSlot() || g.lease.Expires.Before(g.lease.Granted) {
			t.Fatalf("%q parsed to lease %+v", msg, g.lease)
		}
		if g.req.Concurrency <= 0 || strings.Contains(g.req.Key, "\n") {
			t.Fatalf("%q parsed to %+v", msg, g.req)
		}
	})
}
