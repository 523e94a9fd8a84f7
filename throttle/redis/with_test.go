package redis

// With slots on the Redis backend, and the helpers of the tests that count
// scripts.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
)

// scriptCounter is a go-redis hook that counts the scripts run (EVALSHA,
// and EVAL when a script was not loaded yet) and the plain SETs that take
// locks (takeLock): the round trips of the protocol.
type scriptCounter struct {
	redistest.PassHooks
	n     atomic.Int64 // scripts and SETs
	evals atomic.Int64 // scripts only (EVALSHA, EVAL)
}

func (c *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			return err // sent again as EVAL
		}
		switch cmd.Name() {
		case "evalsha", "eval":
			c.evals.Add(1)
			c.n.Add(1)
		case "set":
			c.n.Add(1)
		}
		return err
	}
}

// runs returns the scripts counted since the last call.
func (c *scriptCounter) runs() int { return int(c.n.Swap(0)) }

// withBackend returns a Redis backend under a fresh prefix on rdb, whose
// scripts are counted.
func withBackend(t *testing.T, rdb redis.UniversalClient) (*Backend, *scriptCounter) {
	t.Helper()
	c := &scriptCounter{}
	rdb.AddHook(c)
	b, err := newRedis(rdb, Options{Prefix: redistest.Prefix(t, rdb)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	b.cold = true // counts the scripts of the protocol, as when processes contend
	return b, c
}

func mustTake(t *testing.T, b throttle.Backend, r throttle.Request) throttle.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := b.Acquire(ctx, r)
	if err != nil {
		t.Fatalf("acquire %q: %v", r.Key, err)
	}
	return l
}

// TestRedisWithKeyLineBreak: a With key is a wake-up's message on Redis,
// where a line break would make it read as a grant: it is refused.
func TestRedisWithKeyLineBreak(t *testing.T) {
	t.Parallel()
	b, _ := withBackend(t, redistest.Single(t))
	r := throttle.Request{Key: "{c}/api", Concurrency: 1, With: []throttle.Request{{Key: "{c}@lock\nx", Concurrency: 1}}}
	if _, err := b.TryAcquire(context.Background(), r); !errors.Is(err, throttle.ErrInvalidRequest) {
		t.Errorf("TryAcquire: %v, want ErrInvalidRequest", err)
	}
	if _, err := b.Acquire(context.Background(), r); !errors.Is(err, throttle.ErrInvalidRequest) {
		t.Errorf("Acquire: %v, want ErrInvalidRequest", err)
	}
}

// scriptHold is a go-redis hook that, once armed, holds every run of one
// script until opened.
type scriptHold struct {
	redistest.PassHooks
	s          *script
	armed      atomic.Bool
	held, open chan struct{}
	once       sync.Once
}

func (h *scriptHold) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); h.armed.Load() && len(args) > 1 && (args[1] == h.s.hash || args[1] == h.s.src) {
			h.once.Do(func() { close(h.held) })
			select {
			case <-h.open:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

// Release gives a lease's own slot back before its With leases, so that the
// key's next waiter does not wait for a lock's round trip: with the release
// script held, the waiter gets the slot all the same.
func TestRedisReleaseHandsOnBeforeItsLocks(t *testing.T) {
	t.Parallel()
	b, _ := gatedBackend(t) // cold: every release runs a script
	hold := &scriptHold{s: b.release, held: make(chan struct{}), open: make(chan struct{})}
	client(b).AddHook(hold)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call := func(customer string) throttle.Request {
		return throttle.Request{Key: "{rel}/api", Concurrency: 1, TTL: time.Minute,
			With: []throttle.Request{{Key: "{rel}/customer/" + customer, Concurrency: 1, TTL: time.Minute}}}
	}
	first := mustTake(t, b, call("a"))
	next := acquireAsync(ctx, b, call("b"))
	headRefused(t, b, "{rel}/api")
	hold.armed.Store(true)
	released := make(chan error, 1)
	go func() { released <- b.Release(ctx, first) }()
	<-hold.held // the lock's release is held: the slot must go on all the same
	var got acquired
	select {
	case got = <-next:
		close(hold.open)
	case <-time.After(5 * time.Second):
		t.Error("the next call waits for the release of the first call's lock")
		close(hold.open)
		got = <-next
	}
	if got.err != nil {
		t.Fatalf("the next call: %v", got.err)
	}
	if err := <-released; err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := b.Release(ctx, got.l); err != nil {
		t.Fatal(err)
	}
}

// A lock taken before a loss (Redis restarted empty: the lock forgotten)
// is checked once the request has its own slot: another process took the
// forgotten lock meanwhile, so the request starts over and waits for it,
// rather than call beside that process. Seen in faults.sh: a copy's
// waiter kept its customer's lock through a 3 s restart, another copy
// took it from the empty Redis, and both marked the customer (a 45033).
func TestRedisLockLostInARestartIsTakenAgain(t *testing.T) {
	t.Parallel()
	bs, _ := gatedBackends(t, 3)
	a, o, x := bs[0], bs[1], bs[2]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	api := throttle.Request{Key: "{e}/api", Concurrency: 1, TTL: 30 * time.Second}
	lock := throttle.Request{Key: "{e}@edit|c1", Concurrency: 1, TTL: 30 * time.Second}
	r := api
	r.With = []throttle.Request{lock}
	theirs := mustTake(t, o, api)
	wctx, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	got := acquireAsync(wctx, a, r) // takes the lock, waits for the API's slot
	queued(t, a, api.Key, 1)
	headRefused(t, a, api.Key)

	// The loss: Redis forgets the lock, a notices (a new era), x takes it.
	if err := client(a).Del(ctx, a.names(lock.Key, nil).lock).Err(); err != nil {
		t.Fatal(err)
	}
	a.era.Add(1)
	xs := mustTake(t, x, lock)
	defer func() { _ = x.Release(context.Background(), xs) }()

	if err := o.Release(ctx, theirs); err != nil { // a's request gets the API's slot
		t.Fatal(err)
	}
	if res := <-got; res.err == nil {
		_ = a.Release(context.Background(), res.l)
		t.Fatal("a got its lease while x held the lock a took before the loss")
	} else if !errors.Is(res.err, context.DeadlineExceeded) {
		t.Fatalf("a's Acquire = %v, want it to wait for the lock until its deadline", res.err)
	}
	if n := holders(t, a, api.Key); n != 0 {
		t.Errorf("the API's slot: %d held after a started over and gave up, want 0", n)
	}
}
