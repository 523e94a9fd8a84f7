package redis

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
)

// hotBackend is withBackend with the hot path on, and a span long enough
// that a loaded machine does not outrun it.
func hotBackend(t *testing.T) (*Backend, *scriptCounter) {
	t.Helper()
	b, c := withBackend(t, redistest.Single(t))
	b.cold, b.quietFor = false, time.Minute
	return b, c
}

// headIdle waits until key's n waiters are queued and the head is not in a
// round trip.
func headIdle(t *testing.T, b *Backend, key string, n int) {
	t.Helper()
	queued(t, b, key, n)
	for range 5000 {
		b.mu.Lock()
		head, ok := b.keys[key].waiters.Head()
		idle := ok && !head.busy
		b.mu.Unlock()
		if idle {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the waiter of %q stayed in a round trip", key)
}

// While no other process waits, a Release hands the slot to this
// process's next waiter without a script, drawing a window unit from the
// block taken ahead; the lease handed on has an id of its own, so the
// first holder's second Release or Extend is refused here and cannot
// touch the new holder's slot.
func TestRedisHandsOnLocally(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		windows []throttle.Window
	}{
		{"no window", nil},
		{"windows", []throttle.Window{{Limit: 10000, Period: time.Minute}, {Limit: 150000, Period: time.Hour}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c := hotBackend(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r := throttle.Request{Key: "{c}/api", Concurrency: 1, TTL: time.Minute, Windows: tc.windows}
			first, w := heldAndAwaited(ctx, t, b, r)
			c.runs()
			if err := b.Release(ctx, first); err != nil {
				t.Fatalf("Release: %v", err)
			}
			got := <-w
			if got.err != nil {
				t.Fatalf("waiter: %v", got.err)
			}
			if n := c.runs(); n != 0 {
				t.Errorf("the hand-over ran %d scripts, want 0", n)
			}
			if got.l.ID == first.ID || redisID(got.l.ID) != first.ID {
				t.Errorf("lease handed on as %q, want an id of its own on Redis's %q", got.l.ID, first.ID)
			}
			if err := b.Release(ctx, first); !errors.Is(err, throttle.ErrLeaseNotHeld) {
				t.Errorf("second Release of the first lease = %v, want ErrLeaseNotHeld", err)
			}
			if _, err := b.Extend(ctx, first, time.Minute); !errors.Is(err, throttle.ErrLeaseNotHeld) {
				t.Errorf("Extend of the first lease = %v, want ErrLeaseNotHeld", err)
			}
			if n := holders(t, b, r.Key); n != 1 {
				t.Fatalf("%d holders after the first holder's second release, want the new holder's 1", n)
			}
			l, err := b.Extend(ctx, got.l, time.Minute)
			if err != nil {
				t.Fatalf("Extend of the lease handed on: %v", err)
			}
			if err := b.Release(ctx, l); err != nil {
				t.Fatalf("Release of the lease handed on: %v", err)
			}
			b.sendLater() // the release no waiter wanted, deferred
			if n := holders(t, b, r.Key); n != 0 {
				t.Errorf("%d holders left, want 0", n)
			}
		})
	}
}

// A lease granted before Redis may have lost its state (the subscription
// broke, as when Redis restarts) is not handed on locally: Redis may no
// longer count its slot, and the next waiter asks Redis for one.
func TestRedisNoLocalHandOnAcrossEras(t *testing.T) {
	t.Parallel()
	b, c := hotBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{c}/era", Concurrency: 1, TTL: time.Minute, Windows: []throttle.Window{{Limit: 10000, Period: time.Minute}}}
	first, w := heldAndAwaited(ctx, t, b, r)
	b.suspect()
	c.runs()
	if err := b.Release(ctx, first); err != nil {
		t.Fatalf("Release: %v", err)
	}
	got := <-w
	if got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	if redisID(got.l.ID) != got.l.ID || c.runs() == 0 {
		t.Errorf("the waiter got %q without Redis, handed on from a lease of the era before", got.l.ID)
	}
	if err := b.Release(ctx, got.l); err != nil {
		t.Errorf("Release of the waiter's lease: %v", err)
	}
}

// A lease whose release began before Redis may have lost its state (the
// era changed between unhold and the hand-on) is not handed on locally:
// the hand-on checks the era under the lock it takes.
func TestRedisHandOnChecksTheEraItself(t *testing.T) {
	t.Parallel()
	b, _ := hotBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{c}/era-race", Concurrency: 1, TTL: time.Minute, Windows: []throttle.Window{{Limit: 10000, Period: time.Minute}}}
	first, w := heldAndAwaited(ctx, t, b, r)
	known, from, err := b.unhold(first)
	if !known || err != nil {
		t.Fatalf("unhold: %v, %v", known, err)
	}
	b.suspect() // the subscription broke between unhold and the hand-on
	if _, err := b.ready(ctx); err != nil {
		t.Fatal(err)
	}
	next, more := b.claimNext(r.Key)
	if next == nil {
		t.Fatal("no waiter to claim")
	}
	if b.handLocal(first, from, next) {
		t.Fatal("a lease of the era before was handed on locally")
	}
	err = b.handOver(ctx, first, next, more) // as Release goes on
	b.letGo(r.Key)
	if err != nil {
		t.Fatalf("handOver: %v", err)
	}
	got := <-w
	if got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	if err := b.Release(ctx, got.l); err != nil {
		t.Errorf("Release: %v", err)
	}
}

// heldAndAwaited takes r's slot and starts a waiter for it, idle at the
// head of its key's line.
func heldAndAwaited(ctx context.Context, t *testing.T, b *Backend, r throttle.Request) (throttle.Lease, <-chan acquired) {
	t.Helper()
	first := mustTake(t, b, r)
	w := acquireAsync(ctx, b, r)
	headIdle(t, b, r.Key, 1)
	return first, w
}

// handOnLocally takes r's slot and releases it to a waiter of the same
// process, which gets it without Redis: it returns both leases.
func handOnLocally(ctx context.Context, t *testing.T, b *Backend, r throttle.Request) (first, next throttle.Lease) {
	t.Helper()
	first, w := heldAndAwaited(ctx, t, b, r)
	if err := b.Release(ctx, first); err != nil {
		t.Fatal(err)
	}
	got := <-w
	if got.err != nil || redisID(got.l.ID) == got.l.ID {
		t.Fatalf("waiter: %+v, %v; want a lease handed on locally", got.l, got.err)
	}
	return first, got.l
}

// A lease handed on locally whose release fails for want of Redis is kept
// under its Redis id, so that the release made when Redis answers frees
// the slot rather than being refused as a lease this process no longer
// holds.
func TestRedisOrphanHandedOnReleased(t *testing.T) {
	t.Parallel()
	b, _ := hotBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{c}/orphan", Concurrency: 1, TTL: time.Minute}
	_, next := handOnLocally(ctx, t, b, r)
	// As Release does when Redis is down: forgotten here, kept to retry.
	if known, _, err := b.unhold(next); !known || err != nil {
		t.Fatalf("unhold: %v, %v", known, err)
	}
	b.orphan(next)
	b.mu.Lock()
	kept := b.orphans[len(b.orphans)-1]
	b.orphans = nil
	b.mu.Unlock()
	if err := b.Release(ctx, kept); err != nil { // as the probe does
		t.Fatalf("the orphan's release: %v", err)
	}
	if n := holders(t, b, r.Key); n != 0 {
		t.Errorf("%d holders left after the orphan's release, want 0", n)
	}
}

// blockWant: units ahead for a few rounds of the waiters, at most a
// hundredth of each window.
func TestBlockWant(t *testing.T) {
	t.Parallel()
	minute := []throttle.Window{{Limit: 10000, Period: time.Minute}, {Limit: 150000, Period: time.Hour}}
	for _, tc := range []struct {
		name    string
		r       throttle.Request
		waiting int
		want    int
	}{
		{"a slot, one waiter", throttle.Request{Concurrency: 5, Windows: minute}, 1, 8},
		{"a slot, many waiters: a hundredth of the minute", throttle.Request{Concurrency: 5, Windows: minute}, 27, 100},
		{"weighted", throttle.Request{Concurrency: 5, Windows: minute, Weight: 3}, 2, 48},
		{"no slot: calls start from the block", throttle.Request{Windows: minute}, 2, 16},
		{"members: the members script takes none", throttle.Request{Windows: minute, Members: []string{"m"}}, 2, 0},
		{"no window", throttle.Request{Concurrency: 5}, 27, 0},
		{"a window under a hundred", throttle.Request{Concurrency: 5, Windows: []throttle.Window{{Limit: 30, Period: 3 * time.Second}}}, 27, 0},
	} {
		if got := blockWant(tc.r, tc.waiting); got != tc.want {
			t.Errorf("%s: blockWant = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A request with windows and no slot (an egress IP's window) starts from
// the block its ask took ahead, without a script, until the block runs out
// or the key cools down.
func TestRedisStartsFromTheBlock(t *testing.T) {
	t.Parallel()
	b, c := hotBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{c}/ip", Windows: []throttle.Window{{Limit: 20000, Period: time.Minute}}}
	mustTake(t, b, r) // the ask: its grant and a block of 8 (blockWant, one waiter)
	if n := c.runs(); n != 1 {
		t.Fatalf("the first acquisition ran %d scripts, want 1", n)
	}
	for i := range 8 {
		if _, err := b.Acquire(ctx, r); err != nil {
			t.Fatalf("acquisition %d from the block: %v", i+1, err)
		}
	}
	if n := c.runs(); n != 0 {
		t.Errorf("8 acquisitions from the block ran %d scripts, want 0", n)
	}
	mustTake(t, b, r) // the block is spent: an ask, and a new block
	if n := c.runs(); n != 1 {
		t.Errorf("the acquisition past the block ran %d scripts, want 1", n)
	}
	if err := b.Cooldown(ctx, r.Key, time.Minute); err != nil {
		t.Fatal(err)
	}
	var le *throttle.LimitError
	if _, err := b.Acquire(ctx, r); !errors.As(err, &le) || le.Reason != throttle.ReasonCooldown {
		t.Errorf("Acquire while the key cools down = %v, want a cooldown's LimitError, not a call from the block", err)
	}
}

// Two processes drawing calls from their blocks start exactly a window's
// limit between them: a block is counted as taken on Redis (never over),
// and what one process holds ahead it spends (nothing lost).
func TestRedisBlocksHoldTheWindowAcrossProcesses(t *testing.T) {
	t.Parallel()
	bs, _ := gatedBackends(t, 2)
	for _, b := range bs {
		b.cold = false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const limit = 800 // blocks of 8: a hundredth of it
	r := throttle.Request{Key: "{c}/ipwin", Windows: []throttle.Window{{Limit: limit, Period: time.Hour}}}
	started, refused := 0, [2]bool{}
	for i := 0; !refused[0] || !refused[1]; i++ {
		p := i % 2
		if refused[p] {
			continue
		}
		_, err := bs[p].Acquire(ctx, r)
		var le *throttle.LimitError
		switch {
		case errors.As(err, &le) && le.Reason == throttle.ReasonRate:
			refused[p] = true
		case err != nil:
			t.Fatalf("process %d: %v", p, err)
		default:
			started++
		}
		if started > limit {
			t.Fatalf("%d calls started in a window of %d", started, limit)
		}
	}
	if started != limit {
		t.Errorf("%d calls started before both processes were refused, want the window's %d", started, limit)
	}
}

// An ask takes a new block when the key's block cannot serve the request
// itself, even with a quarter of a round left: a weighted call without a
// slot would otherwise ask Redis every time until the block ended.
func TestBlockForAWeightTheBlockCannotServe(t *testing.T) {
	t.Parallel()
	b, _ := hotBackend(t)
	r := throttle.Request{Key: "{c}/weighted", Weight: 10, Windows: []throttle.Window{{Limit: 3600, Period: time.Minute}}}
	want := blockWant(r, 1) // 36: a hundredth of the window
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hotOf(r.Key).block = block{units: want / 4, until: time.Now().Add(time.Minute), windows: r.Windows} // 9 left, under a call's 10
	if got := b.blockFor(r, 1); got != want {
		t.Errorf("blockFor with %d units left for a call of %d = %d, want a new block of %d", want/4, r.Units(), got, want)
	}
}

// A slot whose release is under way (it found no waiter of this process
// to hand it to) is not counted as held when a new head decides whether to
// wait for this process's own release rather than ask Redis: it would
// wait for a hand-over that never comes, until its poll a second later.
func TestRedisReleasingSlotNotAwaited(t *testing.T) {
	t.Parallel()
	b, _ := hotBackend(t)
	r := throttle.Request{Key: "{c}/leaving", Concurrency: 1, TTL: time.Minute}
	l := mustTake(t, b, r)
	holdsAll := func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		all, _ := b.holdsAll(r)
		return all
	}
	if !holdsAll() {
		t.Fatal("holdsAll = false while this process holds the only slot")
	}
	if known, _, err := b.unhold(l); !known || err != nil { // as Release does, before its script
		t.Fatalf("unhold: %v, %v", known, err)
	}
	if holdsAll() {
		t.Error("holdsAll = true while the only slot's release is under way: a new head would wait for it in vain")
	}
	b.letGo(r.Key)
	if err := b.Release(context.Background(), throttle.Lease{Key: r.Key, ID: l.ID, Concurrency: 1, Expires: l.Expires}); err != nil {
		t.Fatal(err)
	}
}

// A lease its waiter could not use is handed on to another waiter only
// within the era it was granted in; from an earlier one it goes back to
// Redis, and the waiter asks for a slot Redis counts.
func TestRedisHandOnOfAnEarlierEraGoesBack(t *testing.T) {
	t.Parallel()
	b, _ := hotBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{c}/era-handon", Concurrency: 1, TTL: time.Minute}
	first, w := heldAndAwaited(ctx, t, b, r)
	b.suspect() // Redis may have lost its state since first was granted
	if _, err := b.ready(ctx); err != nil {
		t.Fatal(err)
	}
	b.handOn(r.Key, first, r) // as when the waiter it was granted for left
	got := <-w
	if got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	if got.l.ID == first.ID {
		t.Errorf("the waiter got %q, a lease of the era before, handed on", got.l.ID)
	}
	if err := b.Release(ctx, got.l); err != nil {
		t.Errorf("Release of the waiter's lease: %v", err)
	}
}

// While another process waits for the key, a slot Redis granted still goes
// on locally localTurns times, then a hand-over through Redis yields it to
// that process: each pass between processes serves localTurns + 1 calls.
func TestRedisTurnsWhileAnotherWaits(t *testing.T) {
	t.Parallel()
	bs, gs := gatedBackends(t, 2)
	a, b := bs[0], bs[1]
	for _, p := range bs {
		p.cold, p.quietFor = false, time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{c}/turns", Concurrency: 1, TTL: time.Minute}
	held, bw := heldWhileBWaits(ctx, t, a, b, r)
	var aw []<-chan acquired
	for i := range localTurns + 1 {
		aw = append(aw, acquireAsync(ctx, a, r))
		queued(t, a, r.Key, i+1) // in this order
	}
	headIdle(t, a, r.Key, localTurns+1)
	for turn := range localTurns {
		asks, _ := gs[0].counts()
		if err := a.Release(ctx, held); err != nil {
			t.Fatalf("Release %d: %v", turn+1, err)
		}
		got := <-aw[turn]
		if got.err != nil || redisID(got.l.ID) == got.l.ID {
			t.Fatalf("turn %d: a's waiter got %q, %v; want the slot handed on locally", turn+1, got.l.ID, got.err)
		}
		held = got.l
		// a's next head asks for itself, and is refused, before the next
		// release: asking as the slot frees, it could take it past b.
		eventually(t, "a's next head asks", func() bool { n, _ := gs[0].counts(); return n > asks })
		headIdle(t, a, r.Key, localTurns-turn)
	}
	if err := a.Release(ctx, held); err != nil { // the turns are over: b's
		t.Fatalf("Release: %v", err)
	}
	got := <-bw
	if got.err != nil {
		t.Fatalf("b: %v", got.err)
	}
	select {
	case res := <-aw[localTurns]:
		t.Fatalf("a's last waiter got %+v while b holds the only slot", res)
	default:
	}
	if err := b.Release(ctx, got.l); err != nil {
		t.Fatal(err)
	}
	res := <-aw[localTurns]
	if res.err != nil {
		t.Fatalf("a's last waiter: %v", res.err)
	}
	if err := a.Release(ctx, res.l); err != nil {
		t.Fatal(err)
	}
}

// While another process waits, a slot goes on locally only within quietFor
// (localSpan) of Redis's grant, whatever turns are left: a process whose
// calls are slow yields after one.
func TestRedisTurnsEndWithTheSpan(t *testing.T) {
	t.Parallel()
	bs, _ := gatedBackends(t, 2)
	a, b := bs[0], bs[1]
	for _, p := range bs {
		p.cold, p.quietFor = false, 100*time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{c}/span", Concurrency: 1, TTL: time.Minute}
	held, bw := heldWhileBWaits(ctx, t, a, b, r)
	granted := time.Now() // after the grant
	aw := acquireAsync(ctx, a, r)
	headIdle(t, a, r.Key, 1)
	time.Sleep(time.Until(granted.Add(a.quietFor)))
	if err := a.Release(ctx, held); err != nil {
		t.Fatal(err)
	}
	var got acquired
	select {
	case got = <-bw:
	case res := <-aw:
		t.Fatalf("a's waiter got %q past the span, b still waiting", res.l.ID)
	}
	if got.err != nil {
		t.Fatalf("b: %v", got.err)
	}
	if err := b.Release(ctx, got.l); err != nil {
		t.Fatal(err)
	}
	if res := <-aw; res.err != nil {
		t.Fatalf("a's waiter: %v", res.err)
	} else if err := a.Release(ctx, res.l); err != nil {
		t.Fatal(err)
	}
}

// heldWhileBWaits takes r's only slot on a, then has b wait for it, and
// waits until a learns from the notice that b waits.
func heldWhileBWaits(ctx context.Context, t *testing.T, a, b *Backend, r throttle.Request) (throttle.Lease, <-chan acquired) {
	t.Helper()
	held := mustTake(t, a, r)
	bw := acquireAsync(ctx, b, r)
	headRefused(t, b, r.Key)
	eventually(t, "a learns from the notice that b waits", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		h := a.hot[r.Key]
		return h != nil && h.contended
	})
	return held, bw
}

// eventually fails the test unless cond holds within 5 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 5000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s: not within 5 s", what)
}

// While Redis answers, a process hands its slots on locally past
// localSpan: only a notice stops it, and a waiter repeats its notice (see
// TestRedisWaiterRepeatsItsNotice). Calls slower than the span (a second,
// a provider's corps) no longer cost a hand-over through Redis each.
func TestRedisHandsOnPastTheSpan(t *testing.T) {
	t.Parallel()
	b, c := hotBackend(t)
	b.quietFor = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{c}/slow", Concurrency: 1, TTL: time.Minute}
	first, w := heldAndAwaited(ctx, t, b, r)
	time.Sleep(5 * b.quietFor) // the call
	c.runs()
	if err := b.Release(ctx, first); err != nil {
		t.Fatal(err)
	}
	got := <-w
	if got.err != nil {
		t.Fatal(got.err)
	}
	if n := c.runs(); n != 0 || redisID(got.l.ID) == got.l.ID {
		t.Errorf("a release past the span ran %d scripts, handing on %q; want 0, a lease handed on locally", n, got.l.ID)
	}
	if err := b.Release(ctx, got.l); err != nil {
		t.Fatal(err)
	}
}

// A waiter refused a slot tells the other processes that it waits when it
// queues, and again at an ask half a second or more later: a notice lost
// by a subscription does not leave it waiting while they hand their slots
// on locally.
func TestRedisWaiterRepeatsItsNotice(t *testing.T) {
	t.Parallel()
	bs, _ := gatedBackends(t, 2)
	a, b := bs[0], bs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	notices := client(a).Subscribe(ctx, a.channel)
	t.Cleanup(func() { _ = notices.Close() })
	if _, err := notices.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	r := throttle.Request{Key: "{c}/renotice", Concurrency: 1, TTL: time.Minute}
	held := mustTake(t, a, r)
	wctx, stop := context.WithTimeout(ctx, 2500*time.Millisecond) // asks at 0, 1 and 2 s (resync)
	defer stop()
	if _, err := b.Acquire(wctx, r); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("b's Acquire while a holds the slot = %v, want its deadline", err)
	}
	n := 0
	for {
		rctx, done := context.WithTimeout(ctx, 100*time.Millisecond)
		msg, err := notices.ReceiveMessage(rctx)
		done()
		if err != nil {
			break
		}
		if strings.HasSuffix(msg.Payload, "\n"+r.Key) {
			n++
		}
	}
	if n < 2 {
		t.Errorf("b told %d notices while it waited 2.5 s, want one at its first ask and again later", n)
	}
	if err := a.Release(ctx, held); err != nil {
		t.Fatal(err)
	}
}

// A block outlasts a call a little longer than a bucket of its window: two
// workers taking turns on one slot, each call 250 ms on a window of 200 ms
// buckets (a block of 600 ms), hand the slot on from the block for turns
// on end: 8 scripts for 12 calls. With a block of one bucket (blockSpan
// before it spanned three), every turn found its block ended and asked
// Redis, releasing through it too: 24 scripts (bench/providers.sh: 1 s
// calls on 1-minute windows asked Redis every round).
func TestRedisBlockOutlastsACall(t *testing.T) {
	t.Parallel()
	b, c := hotBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := throttle.Request{Key: "{c}/turns", Concurrency: 1, TTL: time.Minute,
		Windows: []throttle.Window{{Limit: 100000, Period: 20 * time.Second}}}
	const calls = 12
	c.runs()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range calls / 2 {
				l, err := b.Acquire(ctx, r)
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(250 * time.Millisecond) // the call
				if err := b.Release(ctx, l); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := c.evals.Swap(0); n > calls {
		t.Errorf("%d calls of 250 ms ran %d scripts, want at most one a call: the block ended with each call", calls, n)
	}
}

// blockSpan: three buckets of the shortest window on a key no other process
// waits for, at most 2 s; one bucket, at most a second, on a contended one.
func TestBlockSpan(t *testing.T) {
	minute := []throttle.Window{{Limit: 10000, Period: time.Minute}, {Limit: 150000, Period: time.Hour}}
	hour := []throttle.Window{{Limit: 150000, Period: time.Hour}}
	tiny := []throttle.Window{{Limit: 5, Period: 50 * time.Millisecond}}
	for _, tc := range []struct {
		name      string
		ws        []throttle.Window
		contended bool
		want      time.Duration
	}{
		{"minute", minute, false, 1800 * time.Millisecond},
		{"minute, contended", minute, true, 600 * time.Millisecond},
		{"hour", hour, false, maxBlockSpan},
		{"hour, contended", hour, true, time.Second},
		{"under a bucket of a millisecond", tiny, false, 1 * time.Millisecond},
		{"under a bucket of a millisecond, contended", tiny, true, 0},
	} {
		if got := blockSpan(tc.ws, tc.contended); got != tc.want {
			t.Errorf("%s: blockSpan = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// eraOnAnswer is a go-redis hook that, once armed, runs fn right after the
// next acquire script answers, before the backend reads the answer: as when
// a restart is noticed while an answer from the Redis that died waits in
// the socket.
type eraOnAnswer struct {
	redistest.PassHooks
	sha  string
	asks atomic.Int64 // acquire scripts answered
	fn   atomic.Pointer[func()]
}

func (h *eraOnAnswer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); err == nil && len(args) > 1 && (args[1] == h.sha || args[1] == lua("acquire")) {
			h.asks.Add(1)
			if fn := h.fn.Swap(nil); fn != nil {
				(*fn)()
			}
		}
		return err
	}
}

// TestRedisGrantAcrossErasGivenBack: a grant of a slot whose answer is read
// after a new era began (Redis may have restarted empty meanwhile, and the
// answer come from the one that died) is not handed to the caller, who
// would hold a slot the Redis answering now does not count: it is given
// back, and asked for again at once. On one slot, that second ask is
// granted only once the first grant was freed. A grant of window counts
// alone is kept: the ledger writes those back (restore).
func TestRedisGrantAcrossErasGivenBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		r    throttle.Request
		asks int64 // acquire scripts wanted
	}{
		// Lock-shaped (one slot, no window): before any script told the
		// server's time its first ask is a script, not a plain SET
		// (takeLock), and the second, attempt's, is one too.
		{"slot", throttle.Request{Key: "{c}/late-slot", Concurrency: 1, TTL: time.Minute}, 2},
		{"windows", throttle.Request{Key: "{c}/late-windows", Windows: []throttle.Window{{Limit: 10, Period: time.Minute}}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb := redistest.Single(t)
			b, _ := withBackend(t, rdb)
			h := &eraOnAnswer{sha: b.acquire.hash}
			rdb.AddHook(h)
			suspect := b.suspect
			h.fn.Store(&suspect)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l, err := b.Acquire(ctx, tc.r)
			if err != nil {
				t.Fatalf("Acquire: %v (a first grant not given back holds the one slot for its minute)", err)
			}
			if n := h.asks.Load(); n != tc.asks {
				t.Errorf("%d acquire scripts, want %d (a slot granted across a new era given back and asked again; window counts kept)", n, tc.asks)
			}
			if tc.r.Concurrency == 1 {
				if _, err := b.TryAcquire(ctx, tc.r); !errors.Is(err, throttle.ErrLimited) {
					t.Errorf("TryAcquire beside the holder: %v, want the one slot taken", err)
				}
			}
			if err := b.Release(ctx, l); err != nil {
				t.Errorf("Release: %v", err)
			}
		})
	}
}
