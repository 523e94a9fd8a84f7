package throttle

// With slots on the Redis backend: one round trip to take and one to
// release a call's slots, and a busy lock at a hand-over.

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
)

// markRequest is a mark_tag call's request on the Redis backend: the API's
// slot and windows, and a customer's lock as a With slot in the same hash
// tag.
func markRequest(customer string, conc int) Request {
	return Request{
		Key: "{corp}/cgi-bin/externalcontact/mark_tag", Concurrency: conc, TTL: time.Minute,
		Windows: []Window{{Limit: 10000, Period: time.Minute}, {Limit: 150000, Period: time.Hour}},
		With:    []Request{{Key: "{corp}@customer-edit|u1|" + customer, Concurrency: 1, TTL: time.Minute}},
	}
}

// scriptCounter is a go-redis hook that counts the scripts run (EVALSHA,
// and EVAL when a script was not loaded yet).
type scriptCounter struct{ n atomic.Int64 }

func (c *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); (name == "evalsha" || name == "eval") && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.n.Add(1)
		}
		return err
	}
}

// runs returns the scripts counted since the last call.
func (c *scriptCounter) runs() int { return int(c.n.Swap(0)) }

// withBackend returns a Redis backend under a fresh prefix on rdb, whose
// scripts are counted.
func withBackend(t *testing.T, rdb redis.UniversalClient) (*Redis, *scriptCounter) {
	t.Helper()
	c := &scriptCounter{}
	rdb.AddHook(c)
	b, err := NewRedis(rdb, RedisOptions{Prefix: redistest.Prefix(t, rdb)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, c
}

// TestRedisWithOneRoundTrip: a call's API slot, windows and customer lock
// are taken in one round trip and released in one; a release that hands
// the slot to a waiter of the process releases the lock and grants the
// waiter its own lock in that same round trip.
func TestRedisWithOneRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		rdb  func(testing.TB) redis.UniversalClient
	}{{"Single", redistest.Single}, {"Cluster", redistest.Cluster}} {
		t.Run(tc.name, func(t *testing.T) {
			b, rec := withBackend(t, tc.rdb(t))
			ctx := context.Background()
			warm := mustTake(t, b, markRequest("warm", 1)) // loads the scripts
			if err := b.Release(ctx, warm); err != nil {
				t.Fatal(err)
			}

			rec.runs()
			l := mustTake(t, b, markRequest("wm1", 1))
			if n := rec.runs(); n != 1 {
				t.Errorf("acquire ran %d scripts, want 1", n)
			}
			if len(l.With) != 1 || !l.With[0].HoldsSlot() {
				t.Fatalf("lease %+v: want one With lease holding its slot", l)
			}
			if _, err := b.TryAcquire(ctx, Request{Key: l.With[0].Key, Concurrency: 1}); err == nil {
				t.Fatal("the customer's lock was free while the lease held it")
			}

			w := handOverCounted(t, b, rec, l)
			free, err := b.TryAcquire(ctx, Request{Key: l.With[0].Key, Concurrency: 1})
			if err != nil {
				t.Fatalf("the released lease's lock is still held: %v", err)
			}
			rec.runs()
			if err := b.Release(ctx, w); err != nil {
				t.Fatal(err)
			}
			if n := rec.runs(); n != 1 {
				t.Errorf("a release ran %d scripts, want 1", n)
			}
			if err := b.Release(ctx, w); err != ErrLeaseNotHeld {
				t.Errorf("second release: %v, want ErrLeaseNotHeld", err)
			}
			_ = b.Release(ctx, free)
		})
	}
}

// handOverCounted releases l while a waiter for another customer waits,
// checks that the hand-over ran one script and gave the waiter its own
// lock, and returns the waiter's lease.
func handOverCounted(t *testing.T, b *Redis, rec *scriptCounter, l Lease) Lease {
	t.Helper()
	ctx := context.Background()
	got := make(chan Lease, 1)
	go func() {
		w, err := b.Acquire(ctx, markRequest("wm2", 1))
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	headRefused(t, b, markRequest("wm2", 1).Key)
	rec.runs()
	if err := b.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	w := <-got
	if n := rec.runs(); n != 1 {
		t.Errorf("the release handing over ran %d scripts, want 1", n)
	}
	if len(w.With) != 1 || w.With[0].Key != "{corp}@customer-edit|u1|wm2" {
		t.Fatalf("handed-over lease %+v: want its own customer's lock", w)
	}
	return w
}

func mustTake(t *testing.T, b Backend, r Request) Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := b.Acquire(ctx, r)
	if err != nil {
		t.Fatalf("acquire %q: %v", r.Key, err)
	}
	return l
}

// TestRedisWithBusyAtHandOver: a release hands the API's slot to the first
// waiter of the process, whose customer is locked by another call; that
// waiter leaves the line holding nothing, and the slot goes to the next
// waiter (in the same Release, or by its own ask when it heads the line
// by then), not when the lock frees. The first gets its lease once
// the lock is released.
func TestRedisWithBusyAtHandOver(t *testing.T) {
	b, _ := withBackend(t, redistest.Single(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lock := mustTake(t, b, Request{Key: "{corp}@customer-edit|u1|busy", Concurrency: 1, TTL: time.Minute})
	api := mustTake(t, b, markRequest("first", 1))

	first, second := make(chan Lease, 1), make(chan Lease, 1)
	for i, w := range []struct {
		customer string
		to       chan Lease
	}{{"busy", first}, {"free", second}} {
		go func() {
			l, err := b.Acquire(ctx, markRequest(w.customer, 1))
			if err != nil {
				t.Error(err)
			}
			w.to <- l
		}()
		queued(t, b, markRequest("", 1).Key, i+1)
	}
	headRefused(t, b, markRequest("", 1).Key)
	if err := b.Release(ctx, api); err != nil {
		t.Fatal(err)
	}
	var l2 Lease
	select {
	case l2 = <-second:
	case l1 := <-first:
		t.Fatalf("the waiter whose customer is locked got %+v while the lock was held", l1)
	}
	if len(l2.With) != 1 || !strings.HasSuffix(l2.With[0].Key, "|free") {
		t.Fatalf("second waiter's lease %+v: want its own lock", l2)
	}
	// The first waiter holds nothing while it waits for the lock: not the
	// API's only slot, which the second holds, nor anything else.
	if err := b.Release(ctx, l2); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, lock); err != nil {
		t.Fatal(err)
	}
	l1 := <-first
	if len(l1.With) != 1 || !strings.HasSuffix(l1.With[0].Key, "|busy") || !l1.With[0].HoldsSlot() {
		t.Fatalf("first waiter's lease %+v: want the lock it waited for", l1)
	}
	if err := b.Release(ctx, l1); err != nil {
		t.Fatal(err)
	}
}

// TestRedisWithGrantAcrossProcesses: a hand-over that yields the API's slot
// to a process that has waited longer grants it, in the same round trip,
// the lock of the waiter that process queued for (recorded in Redis when
// it queued): that waiter starts its call without running a script, and
// the released lease's lock is free.
func TestRedisWithGrantAcrossProcesses(t *testing.T) {
	bs, gs := gatedBackends(t, 2)
	a, b := bs[0], bs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := mustTake(t, a, markRequest("h", 1))
	key := markRequest("", 1).Key
	bw := acquireAsync(ctx, b, markRequest("b", 1)) // b waits first
	headRefused(t, b, key)
	aw := acquireAsync(ctx, a, markRequest("a", 1))
	headRefused(t, a, key)

	before := gs[1].ran()
	if err := a.Release(ctx, h); err != nil { // yields to b
		t.Fatal(err)
	}
	got := <-bw
	if got.err != nil {
		t.Fatal(got.err)
	}
	if n := gs[1].ran() - before; n != 0 {
		t.Errorf("b ran %d scripts between the grant and its call, want none", n)
	}
	if len(got.l.With) != 1 || !strings.HasSuffix(got.l.With[0].Key, "|b") || !got.l.With[0].HoldsSlot() ||
		got.l.With[0].ID != got.l.ID+".1" {
		t.Fatalf("b's lease %+v: want its own lock, taken with the grant", got.l)
	}
	if n := holders(t, a, got.l.With[0].Key); n != 1 {
		t.Fatalf("b's lock has %d holders in Redis, want 1", n)
	}
	if n := holders(t, a, h.With[0].Key); n != 0 {
		t.Fatalf("the released lease's lock has %d holders, want 0", n)
	}
	if err := b.Release(ctx, got.l); err != nil {
		t.Fatal(err)
	}
	res := <-aw
	if res.err != nil || len(res.l.With) != 1 {
		t.Fatalf("a: %+v, %v", res.l, res.err)
	}
	if err := a.Release(ctx, res.l); err != nil {
		t.Fatal(err)
	}
	noHolders(t, a, key, got.l.With[0].Key, res.l.With[0].Key)
}

// noHolders checks that keys have no lease left in Redis.
func noHolders(t *testing.T, b *Redis, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if n := holders(t, b, k); n != 0 {
			t.Errorf("%q has %d holders left, want 0", k, n)
		}
	}
}

// TestRedisWithYieldToNobody: a hand-over that would yield to another
// process finds it gone (its PUBLISH reaches nobody) and serves this
// process's waiter after all; that waiter's lock, held by another call,
// is checked like any other: the script refuses it rather than take a
// held lock (and, before the fix, failed halfway, leaking the API's slot).
func TestRedisWithYieldToNobody(t *testing.T) {
	rdb := redistest.Single(t)
	b, _ := withBackend(t, rdb)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	key, lock := "{c}/api", "{c}@lock"
	r := Request{Key: key, Concurrency: 1, TTL: time.Minute, With: []Request{{Key: lock, Concurrency: 1, TTL: time.Minute}}}
	api := mustTake(t, b, r.withless())
	held := mustTake(t, b, Request{Key: lock, Concurrency: 1, TTL: time.Minute}) // another call's lock
	waiter := acquireAsync(ctx, b, r)
	headRefused(t, b, key)
	if err := rdb.ZAdd(ctx, b.names(key, nil).waiting, redis.Z{Score: 0, Member: "gone"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, api); err != nil {
		t.Fatalf("release: %v", err)
	}
	if n := holders(t, b, lock); n != 1 {
		t.Fatalf("the lock has %d holders, want 1", n)
	}
	if err := b.Release(ctx, held); err != nil {
		t.Fatal(err)
	}
	got := <-waiter
	if got.err != nil || len(got.l.With) != 1 {
		t.Fatalf("waiter: %+v, %v; want its lease once the lock is free", got.l, got.err)
	}
	if n := holders(t, b, key); n != 1 {
		t.Fatalf("the API key has %d holders, want the waiter's only", n)
	}
	if err := b.Release(ctx, got.l); err != nil {
		t.Fatal(err)
	}
}

// TestRedisWithKeyLineBreak: a With key is a wake-up's message on Redis,
// where a line break would make it read as a grant: it is refused.
func TestRedisWithKeyLineBreak(t *testing.T) {
	b, _ := withBackend(t, redistest.Single(t))
	r := Request{Key: "{c}/api", Concurrency: 1, With: []Request{{Key: "{c}@lock\nx", Concurrency: 1}}}
	if _, err := b.TryAcquire(context.Background(), r); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("TryAcquire: %v, want ErrInvalidRequest", err)
	}
	if _, err := b.Acquire(context.Background(), r); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("Acquire: %v, want ErrInvalidRequest", err)
	}
}
