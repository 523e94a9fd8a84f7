package redis

// Hand-overs inside one process, tested with a view of the local queue (so
// that "the waiter has queued" is a state, not a sleep) and a go-redis hook
// that holds a head's own round trip while a Release runs. The helpers here
// serve the tests across processes (redis_grant_test.go) too.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
)

// acquireGate is a go-redis hook on the acquire script. It counts the calls
// by kind (a head asking for itself, or a hand-over that releases a lease
// first), and every script the client runs, and, when armed, holds the
// next head's call until opened, or, when armedReply, the next hand-over's
// answer (Redis has run it).
type acquireGate struct {
	redistest.PassHooks
	sha string

	mu        sync.Mutex
	asks      int           // acquire calls with no lease to release
	handovers int           // acquire calls that release a lease first
	scripts   int           // scripts run (EVALSHA, EVAL), any script
	armed     bool          // hold the next ask
	armReply  bool          // hold the next hand-over's answer
	held      chan struct{} // closed when an ask is being held
	open      chan struct{} // closing it lets the held ask go
}

func newAcquireGate(sha string) *acquireGate {
	return &acquireGate{sha: sha, held: make(chan struct{}), open: make(chan struct{})}
}

func (g *acquireGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) < 3 || args[1] != g.sha && args[1] != lua("acquire") {
			err := next(ctx, cmd)
			if name := cmd.Name(); (name == "evalsha" || name == "eval") && !redis.HasErrorPrefix(err, "NOSCRIPT") {
				g.mu.Lock()
				g.scripts++
				g.mu.Unlock()
			}
			return err
		}
		// eval[sha] script numkeys KEYS... ARGV...: ARGV[6] is the lease to
		// release.
		nkeys, _ := args[2].(int)
		release, _ := args[3+nkeys+5].(string)
		g.holdIf(&g.armed, release == "")
		err := next(ctx, cmd)
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			return err // EVAL follows
		}
		g.holdIf(&g.armReply, release != "")
		g.mu.Lock()
		if release == "" {
			g.asks++
		} else {
			g.handovers++
		}
		g.scripts++
		g.mu.Unlock()
		return err
	}
}

// holdIf, when this call is what *armed waits for (when), disarms it and
// holds the call until the gate opens.
func (g *acquireGate) holdIf(armed *bool, when bool) {
	g.mu.Lock()
	hold := when && *armed
	if hold {
		*armed = false
	}
	g.mu.Unlock()
	if hold {
		close(g.held)
		<-g.open
	}
}

func (g *acquireGate) counts() (asks, handovers int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.asks, g.handovers
}

func (g *acquireGate) scriptCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.scripts
}

// gatedBackend returns a Redis backend whose client carries a gate on the
// acquire script, under a fresh prefix.
func gatedBackend(t *testing.T) (*Backend, *acquireGate) {
	t.Helper()
	bs, gs := gatedBackends(t, 1)
	return bs[0], gs[0]
}

// gatedBackends returns n Redis backends under one fresh prefix, each with
// its own client and gate, subscribed: n processes, as far as the backends
// can tell.
func gatedBackends(t *testing.T, n int) ([]*Backend, []*acquireGate) {
	t.Helper()
	shared := redistest.Single(t)
	opt := shared.(*redis.Client).Options()
	prefix := redistest.Prefix(t, shared)
	var (
		bs []*Backend
		gs []*acquireGate
	)
	for range n {
		rdb := redis.NewClient(&redis.Options{Addr: opt.Addr})
		t.Cleanup(func() { _ = rdb.Close() })
		b, err := newRedis(rdb, Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		b.cold = true // the protocol between processes, as when they contend
		g := newAcquireGate(b.acquire.hash)
		rdb.AddHook(g)
		bs, gs = append(bs, b), append(gs, g)
	}
	for _, b := range bs {
		subscribed(t, b) // so that a wake-up published to it reaches it
	}
	return bs, gs
}

// subscribed waits until b's subscription is in place, so that a wake-up
// published to it reaches it.
func subscribed(t *testing.T, b *Backend) {
	t.Helper()
	ch := b.wakePrefix + b.proc
	for range 5000 {
		n, err := client(b).PubSubNumSub(context.Background(), ch).Result()
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
func waitingProcs(t *testing.T, b *Backend, key string) []string {
	t.Helper()
	ps, err := client(b).ZRange(context.Background(), b.names(key, nil).waiting, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// windowTotal returns how many acquisitions the window of r with period p
// counts now.
func windowTotal(t *testing.T, b *Backend, r throttle.Request, p time.Duration) int {
	t.Helper()
	for i, w := range r.Windows {
		if w.Period == p {
			n, err := client(b).HGet(context.Background(), b.names(r.Key, r.Windows).windows[i], "t").Int()
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
func queued(t *testing.T, b *Backend, key string, n int) {
	t.Helper()
	for range 5000 {
		b.mu.Lock()
		k := b.keys[key]
		got := 0
		if k != nil {
			got = k.waiters.Len()
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
func headRefused(t *testing.T, b *Backend, key string) {
	t.Helper()
	for range 5000 {
		b.mu.Lock()
		k := b.keys[key]
		ok := false
		if k != nil && k.refused != nil {
			head, any := k.waiters.Head()
			ok = any && !head.busy
		}
		b.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the head of %q was never refused", key)
}

// afterArrival returns once Redis's clock has passed the millisecond proc
// was queued on key in: a process queued in the same millisecond would
// rank by its id, not after proc (arrivals are counted in milliseconds).
func afterArrival(t *testing.T, b *Backend, key, proc string) {
	t.Helper()
	ctx := context.Background()
	arrived, err := client(b).ZScore(ctx, b.names(key, nil).waiting, proc).Result()
	if err != nil {
		t.Fatalf("%s's arrival on %q: %v", proc, key, err)
	}
	for {
		now, err := client(b).Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if float64(now.UnixMilli()) > arrived {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

type acquired struct {
	l   throttle.Lease
	err error
}

func acquireAsync(ctx context.Context, b *Backend, r throttle.Request) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := b.Acquire(ctx, r)
		ch <- acquired{l, err}
	}()
	return ch
}

// holders counts the leases Redis holds on key: in its holders ZSET, or
// its lock (a cooldown's empty mark is none).
func holders(t *testing.T, b *Backend, key string) int64 {
	t.Helper()
	return countHolders(t, client(b), b.names(key, nil))
}

func countHolders(t *testing.T, rdb redis.UniversalClient, k redisKeys) int64 {
	t.Helper()
	ctx := context.Background()
	n, err := rdb.ZCard(ctx, k.holders).Result()
	if err != nil {
		t.Fatal(err)
	}
	switch v, err := rdb.Get(ctx, k.lock).Result(); {
	case err == nil && v != "":
		n++
	case err != nil && err != redis.Nil:
		t.Fatal(err)
	}
	return n
}

// A Release hands its slot to the first waiter that can take it: while the
// head is in a round trip of its own, the next waiter gets the slot, in the
// release's round trip.
func TestRedisHandsOverPastABusyHead(t *testing.T) {
	t.Parallel()
	b, g := gatedBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := throttle.Request{Key: "busy-head", Concurrency: 1, TTL: 30 * time.Second}
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
	t.Parallel()
	b, g := gatedBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := throttle.Request{Key: "chain", Concurrency: 1, TTL: 30 * time.Second,
		Windows: []throttle.Window{{Limit: 1000, Period: time.Minute}}}
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

// A hand-over that takes one slot of several free does not make the next
// head wait for a wake-up: slots another process freed without one (its
// leases ran out, or its release came before this process queued) are
// taken at once. Without rkey.full's check of the script's answer, the
// next head waited a second while slots stood free (bench/providers.sh:
// corps a round short).
func TestRedisHandOverLeavesFreeSlotsToAsk(t *testing.T) {
	t.Parallel()
	bs, _ := gatedBackends(t, 2)
	a, o := bs[0], bs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{f}/freed", Concurrency: 3, TTL: 30 * time.Second}
	mine := mustTake(t, a, r)
	theirs := []throttle.Lease{mustTake(t, o, r), mustTake(t, o, r)}
	var waiters []<-chan acquired
	for i := range 3 {
		waiters = append(waiters, acquireAsync(ctx, a, r))
		queued(t, a, r.Key, i+1)
	}
	headRefused(t, a, r.Key) // every slot held: a's next hand-over asks for one waiter, no batch

	// o's slots end with no wake-up for a (as if their TTL ran out).
	k := o.names(r.Key, nil)
	for _, l := range theirs {
		if err := client(o).ZRem(ctx, k.holders, redisID(l.ID)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Release(ctx, mine); err != nil { // hands its slot to the head, 2 left free
		t.Fatal(err)
	}
	a.mu.Lock()
	full := a.keys[r.Key] != nil && a.keys[r.Key].full
	a.mu.Unlock()
	if full {
		t.Fatal("the hand-over left two slots free and told the next head to wait for a wake-up")
	}
	for i, w := range waiters {
		got := <-w
		if got.err != nil {
			t.Fatalf("waiter %d: %v", i, got.err)
		}
		defer func() { _ = a.Release(context.Background(), got.l) }()
	}
}

// A head that took a wake-up for this process's turn and was then handed a
// slot by a Release passes the wake-up to the next head: the slot it
// announced stands free, and no other message comes for it. Here the
// hand-over took the last free slot (the next head waits for a wake-up),
// and the other process's release woke the head while the hand-over's
// answer was on its way.
func TestRedisUnusedWakeUpGoesToTheNextHead(t *testing.T) {
	t.Parallel()
	bs, gs := gatedBackends(t, 2)
	a, o, g := bs[0], bs[1], gs[0]
	a.resync = time.Minute // what the wake-up's loss would cost, past the test's deadline
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{u}/unused", Concurrency: 2, TTL: 30 * time.Second}
	mine, theirs := mustTake(t, a, r), mustTake(t, o, r)
	head := acquireAsync(ctx, a, r)
	queued(t, a, r.Key, 1)
	next := acquireAsync(ctx, a, r)
	queued(t, a, r.Key, 2)
	headRefused(t, a, r.Key)

	g.mu.Lock()
	g.armReply = true
	g.mu.Unlock()
	released := make(chan error, 1)
	go func() { released <- a.Release(ctx, mine) }() // hands mine over to the head: the key full again
	<-g.held
	if err := o.Release(ctx, theirs); err != nil { // wakes a, whose head is claimed
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the head takes the wake-up (a slow machine hides the fault, never invents it)
	close(g.open)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	for i, ch := range []<-chan acquired{head, next} {
		got := <-ch
		if got.err != nil {
			t.Fatalf("waiter %d: %v (a slot stood free)", i, got.err)
		}
		defer func() { _ = a.Release(context.Background(), got.l) }()
	}
}
