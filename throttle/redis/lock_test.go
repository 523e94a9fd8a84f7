package redis_test

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// A lock (one slot, no window) free in Redis is taken with one plain SET
// and no script, by TryAcquire and by Acquire alike, once a script has
// told the process the server's time (its first lock goes by script); Redis then holds the
// lease's id under the key's s name, expiring with the lease. A held lock
// is refused through the script (which queues a waiter for a wake-up).
func TestRedisLockTakenWithOneSET(t *testing.T) {
	t.Parallel()
	rdb := redistest.Single(t)
	counter := &cmdCounter{names: make(map[string]int)}
	rdb.AddHook(counter)
	b, prefix := robustBackend(t, rdb, throttleredis.Options{})
	ctx := context.Background()
	r := throttle.Request{Key: "{corp}/customer-a", Concurrency: 1, TTL: time.Minute}
	counter.reset()
	first, err := b.TryAcquire(ctx, throttle.Request{Key: "{corp}/first", Concurrency: 1, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if s, n := counter.scripts(), counter.count("set"); s == 0 || n != 0 {
		t.Errorf("the first lock ran %d scripts and %d SETs, want the script alone: it tells the server's time, on which a lease expires", s, n)
	}
	counter.reset()
	l, err := b.TryAcquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if s, n := counter.scripts(), counter.count("set"); s != 0 || n != 1 {
		t.Errorf("TryAcquire of a free lock ran %d scripts and %d SETs, want 0 and 1", s, n)
	}
	lock := prefix + hashTaggedKey(r.Key) + ":s"
	if v, err := rdb.Get(ctx, lock).Result(); err != nil || v != l.ID {
		t.Errorf("Redis holds %q (%v) at %s, want the lease's id %q", v, err, lock, l.ID)
	}
	if ttl := rdb.PTTL(ctx, lock).Val(); ttl <= 0 || ttl > r.TTL {
		t.Errorf("the lock expires in %s, want within the lease's TTL %s", ttl, r.TTL)
	}
	counter.reset()
	_, err = b.TryAcquire(ctx, r)
	robustWantLimit(t, err, throttle.ReasonConcurrency)
	if n, s := counter.count("set"), counter.count("evalsha"); n != 1 || s != 1 {
		t.Errorf("TryAcquire of a held lock sent %d SETs and %d EVALSHAs, want 1 and 1: the script refuses", n, s)
	}

	other := r
	other.Key = "{corp}/customer-b"
	counter.reset()
	waited, err := b.Acquire(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if s, n := counter.scripts(), counter.count("set"); s != 0 || n != 1 {
		t.Errorf("Acquire of a free lock ran %d scripts and %d SETs, want 0 and 1", s, n)
	}
	for _, held := range []throttle.Lease{first, l, waited} {
		if err := b.Release(ctx, held); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil { // sends the releases deferred
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, lock, prefix+hashTaggedKey(other.Key)+":s").Val(); n != 0 {
		t.Errorf("%d locks left held after their Release and Close, want 0", n)
	}
}

// timeoutError is a network timeout, as a client reports a round trip
// whose answer did not come in time.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// loseSET is a go-redis hook that, while lose is set, sends a SET and then
// reports a timeout instead of its answer: the lock was taken, and the
// process cannot know it.
type loseSET struct {
	redistest.PassHooks
	lose atomic.Bool
}

func (h *loseSET) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "set" && h.lose.Load() {
			cmd.SetErr(timeoutError{})
			return timeoutError{}
		}
		return err
	}
}

// A plain SET whose answer was lost may have taken the lock: the call
// fails as Redis unreachable, and the lease is given back once Redis
// answers a probe, so the lock does not wait for its TTL.
func TestRedisLockLostAnswerGivenBack(t *testing.T) {
	t.Parallel()
	rdb := redistest.Single(t)
	prefix := redistest.Prefix(t, rdb)
	via := redis.NewClient(&redis.Options{Addr: os.Getenv(redistest.EnvAddr)})
	t.Cleanup(func() { _ = via.Close() })
	hook := &loseSET{}
	via.AddHook(hook)
	b, err := throttleredis.New(via, throttleredis.Options{Prefix: prefix, RetryRedisAfter: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	r := throttle.Request{Key: "{corp}/customer-lost", Concurrency: 1, TTL: time.Hour}
	first, err := b.TryAcquire(ctx, throttle.Request{Key: "{corp}/first", Concurrency: 1, TTL: time.Minute}) // a script: the server's time
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, first); err != nil {
		t.Fatal(err)
	}
	hook.lose.Store(true)
	if _, err := b.TryAcquire(ctx, r); !errors.Is(err, throttle.ErrUnavailable) {
		t.Fatalf("TryAcquire whose SET answer was lost = %v, want ErrUnavailable", err)
	}
	hook.lose.Store(false)
	lock := prefix + hashTaggedKey(r.Key) + ":s"
	if n := rdb.Exists(ctx, lock).Val(); n != 1 {
		t.Fatalf("the lost SET left %d locks, want 1: the test tests nothing", n)
	}
	if !robustEventually(10*time.Second, func() bool { return rdb.Exists(ctx, lock).Val() == 0 }) {
		t.Fatalf("the lock is still held %s after Redis answered again, want given back (TTL %s)", 10*time.Second, r.TTL)
	}
	l, err := b.TryAcquire(ctx, r)
	if err != nil {
		t.Fatalf("TryAcquire after the lock was given back: %v", err)
	}
	if err := b.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
}
