package redis_test

// Every operation of the Redis backend still works after SCRIPT FLUSH, by
// EVAL after EVALSHA answers NOSCRIPT.

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// TestRedisScriptCacheFlushed: every operation still works after SCRIPT
// FLUSH, by EVAL after EVALSHA answers NOSCRIPT.
//
// The script cache is per server, not per client: any other process using
// the same scripts on the same server (another test run) may load them again
// between the flush and the operation. So the single-node case runs on a
// private server, where the fallback to EVAL must be seen every time; on the
// shared cluster, every operation must succeed and every NOSCRIPT must be
// followed by EVAL, but an operation may find its script reloaded.
func TestRedisScriptCacheFlushed(t *testing.T) {
	private := func(t testing.TB) redis.UniversalClient {
		addr, _, _ := redistest.StartServer(t)
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	for _, tc := range []struct {
		name   string
		rdb    func(testing.TB) redis.UniversalClient
		strict bool
	}{{"Single", private, true}, {"Cluster", redistest.Cluster, false}} {
		t.Run(tc.name, func(t *testing.T) {
			runScriptCacheFlushed(t, tc.rdb(t), tc.strict)
		})
	}
}

// runScriptCacheFlushed runs every operation after a SCRIPT FLUSH on rdb;
// strict: each must be seen to fall back to EVAL.
func runScriptCacheFlushed(t *testing.T, rdb redis.UniversalClient, strict bool) {
	rec := newCmdRecorder()
	rdb.AddHook(rec)
	b, _ := robustBackend(t, rdb, throttleredis.Options{})
	throttleredis.NoHotPath(b) // every release a script, to be seen after the flush
	f := &flushRun{t: t, rdb: rdb, rec: rec, b: b, strict: strict, ctx: context.Background()}
	ctx := f.ctx
	r := throttle.Request{Key: "{corp}/flush", Concurrency: 1, TTL: 10 * time.Second,
		Windows: []throttle.Window{{Limit: 100, Period: time.Minute}}}

	warm, err := b.Acquire(ctx, r) // loads the scripts
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, warm); err != nil {
		t.Fatal(err)
	}

	l := f.acquireExtendTry(r)
	f.releaseToWaiter(r, l)

	f.flush()
	if err := b.Cooldown(ctx, r.Key, time.Second); err != nil {
		t.Fatalf("Cooldown after SCRIPT FLUSH: %v", err)
	}
	f.fellBack("Cooldown")
	_, err = b.TryAcquire(ctx, r)
	robustWantLimit(t, err, throttle.ReasonCooldown)
}

// flushRun is one run of TestRedisScriptCacheFlushed.
type flushRun struct {
	t      *testing.T
	rdb    redis.UniversalClient
	rec    *cmdRecorder
	b      *throttleredis.Backend
	strict bool // the fallback to EVAL must be seen every time
	ctx    context.Context
}

// flush empties the script cache of every node and forgets the commands
// recorded.
func (f *flushRun) flush() {
	f.t.Helper()
	err := forEachRedisNode(f.ctx, f.rdb, func(ctx context.Context, n redis.Cmdable, _ string) error {
		return n.ScriptFlush(ctx).Err()
	})
	if err != nil {
		f.t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	f.rec.reset()
}

// fellBack checks that the last operation met NOSCRIPT and ran the script
// with EVAL.
func (f *flushRun) fellBack(op string) {
	t := f.t
	t.Helper()
	_, names, _ := f.rec.snapshot()
	i := slices.IndexFunc(names, func(n string) bool { return strings.HasPrefix(n, "evalsha ERR NOSCRIPT") })
	switch {
	case i >= 0 && !slices.Contains(names[i+1:], "eval"):
		t.Errorf("%s after SCRIPT FLUSH sent %q: EVALSHA refused with NOSCRIPT and no EVAL after it", op, names)
	case i < 0 && f.strict:
		t.Errorf("%s after SCRIPT FLUSH sent %q, want EVALSHA refused with NOSCRIPT then EVAL", op, names)
	case i < 0:
		t.Logf("%s after SCRIPT FLUSH met no NOSCRIPT (%q): another client reloaded the script", op, names)
	}
}

// acquireExtendTry runs Acquire, Extend and a refused TryAcquire, each after
// a flush, and returns the lease held.
func (f *flushRun) acquireExtendTry(r throttle.Request) throttle.Lease {
	t, b, ctx := f.t, f.b, f.ctx
	t.Helper()
	f.flush()
	l, err := b.Acquire(ctx, r)
	if err != nil {
		t.Fatalf("Acquire after SCRIPT FLUSH: %v", err)
	}
	f.fellBack("Acquire")

	f.flush()
	if l, err = b.Extend(ctx, l, 20*time.Second); err != nil {
		t.Fatalf("Extend after SCRIPT FLUSH: %v", err)
	}
	f.fellBack("Extend")

	f.flush()
	_, err = b.TryAcquire(ctx, r)
	robustWantLimit(t, err, throttle.ReasonConcurrency)
	f.fellBack("TryAcquire")
	return l
}

// releaseToWaiter releases l, after a flush, to a waiter whose next attempt
// meets the flushed cache.
func (f *flushRun) releaseToWaiter(r throttle.Request, l throttle.Lease) {
	t, b, ctx := f.t, f.b, f.ctx
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	waited := make(chan error, 1)
	go func() {
		w, err := b.Acquire(wctx, r)
		if err == nil {
			err = b.Release(ctx, w)
		}
		waited <- err
	}()
	time.Sleep(50 * time.Millisecond)
	f.flush()
	if err := b.Release(ctx, l); err != nil {
		t.Fatalf("Release after SCRIPT FLUSH: %v", err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("waiter after SCRIPT FLUSH: %v", err)
	}
	f.fellBack("Release")
}
