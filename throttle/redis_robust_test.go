package throttle_test

// Robustness tests of the Redis backend against real Redis servers: mass
// cancellation, a holder process killed with SIGKILL, the absence of client
// clocks in what is sent to Redis, a Redis restart, a flushed script cache,
// and the life and placement of the keys.
//
// Like the conformance suite on real time, these tests assert only counts,
// orders and the backend's own times (Lease.Granted, Lease.Expires, which come
// from the Redis server's clock), never a wall-clock duration. Every wait is
// bounded.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
)

// robustBackend returns a Redis backend on rdb under a fresh key prefix whose
// keys are deleted when the test ends, and the prefix.
func robustBackend(t *testing.T, rdb redis.UniversalClient, opt throttle.RedisOptions) (*throttle.Redis, string) {
	t.Helper()
	prefix := redistest.Prefix(t, rdb)
	opt.Prefix = prefix
	b, err := throttle.NewRedis(rdb, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, prefix
}

// robustWantLimit fails the test unless err is a *LimitError for reason.
func robustWantLimit(t *testing.T, err error, reason throttle.Reason) *throttle.LimitError {
	t.Helper()
	var le *throttle.LimitError
	if !errors.As(err, &le) || !errors.Is(err, throttle.ErrLimited) {
		t.Fatalf("err = %v, want a *LimitError (%s)", err, reason)
	}
	if le.Reason != reason {
		t.Fatalf("reason = %s, want %s (%v)", le.Reason, reason, err)
	}
	return le
}

// robustEventually polls cond every few milliseconds until it holds or limit has
// passed, and reports whether it held. It bounds waits; it asserts no
// duration.
func robustEventually(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// holderGauge counts holders and remembers the most there ever were.
type holderGauge struct{ cur, peak atomic.Int64 }

func (g *holderGauge) inc() {
	n := g.cur.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
}

func (g *holderGauge) dec() { g.cur.Add(-1) }

// redisServerTime returns the Redis server's clock.
func redisServerTime(t *testing.T, rdb redis.UniversalClient) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Errorf("TIME: %v", err)
	}
	return now
}

// forEachRedisNode runs fn on every node holding data: every master of a
// cluster, or the single node.
func forEachRedisNode(ctx context.Context, rdb redis.UniversalClient, fn func(ctx context.Context, node redis.Cmdable, addr string) error) error {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			return fn(ctx, n, n.Options().Addr)
		})
	}
	return fn(ctx, rdb, "single")
}

// scanRedisKeys returns every key under prefix and the node that holds it.
func scanRedisKeys(t *testing.T, rdb redis.UniversalClient, prefix string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	keys := make(map[string]string)
	err := forEachRedisNode(ctx, rdb, func(ctx context.Context, n redis.Cmdable, addr string) error {
		it := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			keys[it.Val()] = addr
			mu.Unlock()
		}
		return it.Err()
	})
	if err != nil {
		t.Fatalf("scanning the keys under %q: %v", prefix, err)
	}
	return keys
}

// TestRedisThousandWaitersCancelled: 1000 waiters on a full key, cancelled at
// once while the two holders release, leave no lease, no window count and no
// goroutine behind.
func TestRedisThousandWaitersCancelled(t *testing.T) {
	const slots, waiters, limit = 2, 1000, 1100
	rdb := redistest.Single(t)
	b, _ := robustBackend(t, rdb, throttle.RedisOptions{})
	ctx := context.Background()
	windows := []throttle.Window{{Limit: limit, Period: 10 * time.Minute}}
	r := throttle.Request{Key: "{corp}/cancel", Concurrency: slots, TTL: 10 * time.Minute, Windows: windows}
	var holders []throttle.Lease
	for range slots {
		l, err := b.TryAcquire(ctx, r)
		if err != nil {
			t.Fatalf("holder: %v", err)
		}
		holders = append(holders, l)
	}
	// The backend's own goroutines included; the first probe, which may
	// still be finishing, is the one that may leave meanwhile.
	base := runtime.NumGoroutine()

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var granted atomic.Int64
	errs := make(chan error, waiters)
	for range waiters {
		go func() {
			l, err := b.Acquire(wctx, r)
			if err == nil {
				// Granted before the cancellation reached it: an ordinary
				// holder, which counts in the window.
				granted.Add(1)
				err = b.Release(ctx, l)
			}
			errs <- err
		}()
	}
	// Let the waiters queue: all started, then a moment to reach their wait.
	if !robustEventually(30*time.Second, func() bool { return runtime.NumGoroutine() >= base-1+waiters }) {
		t.Fatalf("only %d goroutines of %d+%d started", runtime.NumGoroutine(), base, waiters)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(errs); n != 0 {
		t.Fatalf("%d waiters returned while both slots were held", n)
	}

	var race sync.WaitGroup
	race.Go(cancel)
	for _, h := range holders {
		race.Go(func() {
			if err := b.Release(ctx, h); err != nil {
				t.Errorf("Release(holder): %v", err)
			}
		})
	}
	race.Wait()
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
	var cancelled int
	for i := range waiters {
		select {
		case err := <-errs:
			switch {
			case err == nil:
			case errors.Is(err, context.Canceled):
				cancelled++
			default:
				t.Errorf("waiter: %v, want nil or context.Canceled", err)
			}
		case <-timeout.C:
			t.Fatalf("%d of %d waiters still blocked after the cancellation", waiters-i, waiters)
		}
	}
	t.Logf("%d waiters granted before the cancellation reached them, %d cancelled", granted.Load(), cancelled)

	// Exactly the two slots are free.
	var again []throttle.Lease
	for i := range slots {
		l, err := b.TryAcquire(ctx, r)
		if err != nil {
			t.Fatalf("slot %d after the cancellations: %v (a lease was left behind)", i+1, err)
		}
		again = append(again, l)
	}
	_, err := b.TryAcquire(ctx, r)
	robustWantLimit(t, err, throttle.ReasonConcurrency)
	for _, l := range again {
		if err := b.Release(ctx, l); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}

	// The window counted the holders, the granted waiters and the two
	// leases just taken, and nothing for the cancelled waiters.
	count := throttle.Request{Key: r.Key, Windows: windows} // no slot: counts only
	left := 0
	for ; left <= limit; left++ {
		if _, err := b.TryAcquire(ctx, count); err != nil {
			robustWantLimit(t, err, throttle.ReasonRate)
			break
		}
	}
	if used := slots + int(granted.Load()) + slots; used+left != limit {
		t.Errorf("window: %d acquisitions made, %d left of %d: %d counts were left behind by cancelled waiters",
			used, left, limit, limit-used-left)
	}

	if !robustEventually(10*time.Second, func() bool { return runtime.NumGoroutine() <= base }) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines after the cancellations, %d before:\n%s", runtime.NumGoroutine(), base, buf)
	}
}

// The child process of TestRedisSIGKILLedHolder is the test binary itself,
// run with these variables set.
const (
	envKilledChildPrefix = "WECOM_THROTTLE_TEST_KILLED_CHILD_PREFIX"
	envKilledChildAddr   = "WECOM_THROTTLE_TEST_KILLED_CHILD_ADDR"
)

// killedRequest is what the child and the parent of
// TestRedisSIGKILLedHolder acquire: all three slots of one key.
var killedRequest = throttle.Request{Key: "{corp}/killed", Concurrency: 3, TTL: 2 * time.Second}

// TestRedisSIGKILLedHolder: a process holding every slot of a key is killed
// with SIGKILL; another process gets the slots once, and only once, the
// dead holder's leases have expired by the server's clock.
func TestRedisSIGKILLedHolder(t *testing.T) {
	if prefix := os.Getenv(envKilledChildPrefix); prefix != "" {
		killedChild(prefix, os.Getenv(envKilledChildAddr))
		return
	}
	rdb := redistest.Single(t)
	b, prefix := robustBackend(t, rdb, throttle.RedisOptions{})
	r := killedRequest

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestRedisSIGKILLedHolder$", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(),
		envKilledChildPrefix+"="+prefix,
		envKilledChildAddr+"="+os.Getenv(redistest.EnvAddr))
	// The child blocks reading its stdin: if this process dies, the pipe
	// closes and the child exits instead of lingering.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitOnce sync.Once
	var waitErr error
	wait := func() error {
		waitOnce.Do(func() { waitErr = cmd.Wait() })
		return waitErr
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = stdin.Close()
		_ = wait()
	})

	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var held string
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for held == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				_ = wait()
				t.Fatalf("child exited without holding the slots; stderr:\n%s", stderr.String())
			}
			if strings.HasPrefix(line, "held ") {
				held = line
			} else {
				t.Logf("child: %s", line)
			}
		case <-timeout.C:
			t.Fatalf("child did not hold the slots within 30s")
		}
	}
	var childLeases []throttle.Lease
	for _, f := range strings.Fields(held)[1:] {
		id, ms, ok := strings.Cut(f, ":")
		exp, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil {
			t.Fatalf("child printed %q", held)
		}
		childLeases = append(childLeases, throttle.Lease{Key: r.Key, ID: id, Expires: time.UnixMilli(exp)})
	}
	if len(childLeases) != r.Concurrency {
		t.Fatalf("child printed %q: want %d leases", held, r.Concurrency)
	}

	// While the child lives, its slots are taken.
	_, err = b.TryAcquire(context.Background(), r)
	robustWantLimit(t, err, throttle.ReasonConcurrency)

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v", err)
	}
	if err := wait(); err == nil {
		t.Fatalf("child exited cleanly, want killed")
	}
	for range lines { // drain: the pipe is closed now
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan throttle.Lease, r.Concurrency)
	var wg sync.WaitGroup
	for range r.Concurrency {
		wg.Go(func() {
			l, err := b.Acquire(ctx, r)
			if err != nil {
				t.Errorf("Acquire after the kill: %v", err)
				return
			}
			got <- l
		})
	}
	wg.Wait()
	close(got)
	var mine []throttle.Lease
	for l := range got {
		mine = append(mine, l)
	}
	if len(mine) != r.Concurrency {
		t.FailNow()
	}
	byGrant := func(a, b throttle.Lease) int { return a.Granted.Compare(b.Granted) }
	byExpiry := func(a, b throttle.Lease) int { return a.Expires.Compare(b.Expires) }
	slices.SortFunc(mine, byGrant)
	slices.SortFunc(childLeases, byExpiry)
	for i, l := range mine {
		// The i-th slot to free is the i-th child lease to expire.
		if l.Granted.Before(childLeases[i].Expires) {
			t.Errorf("lease %d granted at %d ms, before the dead child's lease %d expired (%d ms)",
				i+1, l.Granted.UnixMilli(), i+1, childLeases[i].Expires.UnixMilli())
		}
		// At every grant, by the server's clock: the child's leases not yet
		// expired plus ours granted so far (all still held) are at most 3.
		holders := i + 1
		for _, c := range childLeases {
			if c.Expires.After(l.Granted) {
				holders++
			}
		}
		if holders > r.Concurrency {
			t.Errorf("at %d ms, %d holders of %d slots", l.Granted.UnixMilli(), holders, r.Concurrency)
		}
		if ttl := l.Expires.Sub(l.Granted); ttl != r.TTL {
			t.Errorf("lease TTL = %s, want %s", ttl, r.TTL)
		}
	}
	for _, c := range childLeases {
		if err := b.Release(context.Background(), c); !errors.Is(err, throttle.ErrLeaseNotHeld) {
			t.Errorf("Release of the dead child's lease %s = %v, want ErrLeaseNotHeld", c.ID, err)
		}
	}
	for _, l := range mine {
		if err := b.Release(context.Background(), l); err != nil {
			t.Errorf("Release: %v", err)
		}
	}
}

// killedChild is the child of TestRedisSIGKILLedHolder: it takes every slot,
// prints "held id:expires-ms ..." and blocks until killed (or until its
// parent goes away and closes its stdin).
func killedChild(prefix, addr string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "killed child:", err)
		os.Exit(3)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b, err := throttle.NewRedis(rdb, throttle.RedisOptions{Prefix: prefix})
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []string
	for range killedRequest.Concurrency {
		l, err := b.TryAcquire(ctx, killedRequest)
		if err != nil {
			fail(err)
		}
		out = append(out, l.ID+":"+strconv.FormatInt(l.Expires.UnixMilli(), 10))
	}
	fmt.Println("held " + strings.Join(out, " "))
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(4) // the parent is gone; it was meant to kill us
}

// cmdRecorder is a go-redis hook that records the arguments of every
// command, the integers the server answered, and the errors.
type cmdRecorder struct {
	mu      sync.Mutex
	args    [][]any
	replies map[int64]bool
	names   []string // command name, with " ERR" appended when it failed
}

func newCmdRecorder() *cmdRecorder { return &cmdRecorder{replies: make(map[int64]bool)} }

func (h *cmdRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cmdRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.before(cmd)
		err := next(ctx, cmd)
		h.after(cmd, err)
		return err
	}
}

func (h *cmdRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.before(c)
		}
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.after(c, c.Err())
		}
		return err
	}
}

func (h *cmdRecorder) before(cmd redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.args = append(h.args, slices.Clone(cmd.Args()))
}

func (h *cmdRecorder) after(cmd redis.Cmder, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		err = cmd.Err()
	}
	name := cmd.Name()
	if err != nil && err != redis.Nil {
		name += " ERR " + err.Error()
	}
	h.names = append(h.names, name)
	if c, ok := cmd.(*redis.Cmd); ok && err == nil {
		var collect func(v any)
		collect = func(v any) {
			switch v := v.(type) {
			case int64:
				h.replies[v] = true
			case []any:
				for _, e := range v {
					collect(e)
				}
			}
		}
		collect(c.Val())
	}
}

func (h *cmdRecorder) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.args, h.names = nil, nil
}

func (h *cmdRecorder) snapshot() (args [][]any, names []string, replies map[int64]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.args), slices.Clone(h.names), maps.Clone(h.replies)
}

var robustDigitRun = regexp.MustCompile(`[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?`)

// numbersIn returns every number an argument spells: the argument itself if
// numeric, every run of digits in a string. ok is false for an argument of
// a type the check does not understand.
func numbersIn(arg any) (nums []float64, ok bool) {
	switch v := arg.(type) {
	case string:
		for _, m := range robustDigitRun.FindAllString(v, -1) {
			if f, err := strconv.ParseFloat(m, 64); err == nil && !math.IsInf(f, 0) {
				nums = append(nums, f)
			}
		}
		return nums, true
	case []byte:
		return numbersIn(string(v))
	case bool, nil:
		return nil, true
	}
	rv := reflect.ValueOf(arg)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return []float64{float64(rv.Int())}, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return []float64{float64(rv.Uint())}, true
	case reflect.Float32, reflect.Float64:
		return []float64{rv.Float()}, true
	}
	return nil, false
}

// TestRedisNoClientClock proves that the backend never sends this process's
// clock to Redis: every time it works with comes from the server.
//
// The requirement is that one process's clock set an hour off changes
// nothing. That cannot be staged for a Go process on this machine: Go reads
// CLOCK_REALTIME itself, through the vDSO, without calling into libc, so
// libfaketime's LD_PRELOAD interposition never sees it (and a static Go
// binary loads no libc at all); Linux time namespaces offset only
// CLOCK_MONOTONIC and CLOCK_BOOTTIME, never CLOCK_REALTIME; and setting the
// system clock would move the Redis server's clock too (and needs
// privileges). So this test proves the property the requirement rests on
// instead: a hook on the client records every command the backend sends, and
// no number in any of them is near the current time in seconds,
// milliseconds, microseconds or nanoseconds, except an exact echo of a time
// the server itself answered (the grant time a cancelled grant refunds). A
// process whose clock is off by any amount therefore sends exactly the same
// commands, and the server, whose clock alone decides, treats it the same.
// The grant times the backend reports are checked against the server's
// TIME, read right after each grant.
func TestRedisNoClientClock(t *testing.T) {
	rdb := redistest.Single(t) // a client of its own: the hook sees only this test
	rec := newCmdRecorder()
	rdb.AddHook(rec)
	b, _ := robustBackend(t, rdb, throttle.RedisOptions{})
	ctx := context.Background()

	var grants atomic.Int64
	// checkLease compares a lease's times with the server's clock read just
	// after it was granted or extended.
	checkLease := func(l throttle.Lease, ttl time.Duration) {
		srv := redisServerTime(t, rdb)
		grants.Add(1)
		if l.Granted.After(srv) || srv.Sub(l.Granted) > 2*time.Second {
			t.Errorf("lease granted at %d ms; the server's TIME right after was %d ms", l.Granted.UnixMilli(), srv.UnixMilli())
		}
		if ttl > 0 {
			start := l.Expires.Add(-ttl)
			if start.After(srv) || srv.Sub(start) > 2*time.Second {
				t.Errorf("lease expires at %d ms, TTL %s; the server's TIME right after was %d ms", l.Expires.UnixMilli(), ttl, srv.UnixMilli())
			}
		}
	}
	acquire := func(ctx context.Context, r throttle.Request) throttle.Lease {
		t.Helper()
		l, err := b.Acquire(ctx, r)
		if err != nil {
			t.Fatalf("Acquire(%q): %v", r.Key, err)
		}
		ttl := time.Duration(0)
		if r.Concurrency > 0 {
			ttl = r.LeaseTTL()
		}
		checkLease(l, ttl)
		return l
	}
	release := func(l throttle.Lease) {
		t.Helper()
		if err := b.Release(ctx, l); err != nil {
			t.Fatalf("Release(%q): %v", l.Key, err)
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()

	// Concurrency and windows together, a wait for a release, Extend.
	conc := throttle.Request{Key: "{corp}/conc", Concurrency: 2, TTL: 10 * time.Second,
		Windows: []throttle.Window{{Limit: 50, Period: 2 * time.Second}, {Limit: 100, Period: time.Minute}}}
	h1, h2 := acquire(ctx, conc), acquire(ctx, conc)
	waited := make(chan throttle.Lease, 1)
	go func() {
		l, err := b.Acquire(wctx, conc)
		if err != nil {
			t.Errorf("waiter: %v", err)
			close(waited)
			return
		}
		checkLease(l, conc.TTL)
		waited <- l
	}()
	time.Sleep(50 * time.Millisecond)
	_, err := b.TryAcquire(ctx, conc)
	robustWantLimit(t, err, throttle.ReasonConcurrency)
	ext, err := b.Extend(ctx, h1, 20*time.Second)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	checkLease(throttle.Lease{Granted: h1.Granted, Expires: ext.Expires}, 20*time.Second) // Expires-20s: the server's time of the Extend
	if d := ext.Expires.Sub(h1.Granted); d < 20*time.Second {
		t.Errorf("Extend by 20s moved the expiry to %s after the grant", d)
	}
	release(ext)
	if l, ok := <-waited; ok {
		release(l)
	}
	release(h2)

	// A wait for a rate window to open.
	rate := throttle.Request{Key: "{corp}/rate", Windows: []throttle.Window{{Limit: 3, Period: 300 * time.Millisecond}}}
	for range 7 {
		release(acquire(wctx, rate))
	}
	for range 10 {
		if _, err = b.TryAcquire(ctx, rate); err != nil {
			break
		}
	}
	robustWantLimit(t, err, throttle.ReasonRate)
	long := throttle.Request{Key: "{corp}/long", Windows: []throttle.Window{{Limit: 1, Period: time.Hour}}}
	acquire(ctx, long)
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = b.Acquire(dctx, long) // fails at once: the wait outlasts the deadline
	dcancel()
	robustWantLimit(t, err, throttle.ReasonRate)

	// A wait for an expired holder's TTL.
	ttl := throttle.Request{Key: "{corp}/ttl", Concurrency: 1, TTL: 300 * time.Millisecond}
	dead := acquire(ctx, ttl)
	after := acquire(wctx, ttl)
	if after.Granted.Before(dead.Expires) {
		t.Errorf("granted at %d ms before the holder's expiry %d ms", after.Granted.UnixMilli(), dead.Expires.UnixMilli())
	}
	release(after)

	// Cooldowns: one waited out, one refused.
	cd := throttle.Request{Key: "{corp}/cooldown", Concurrency: 1, TTL: time.Second}
	if err := b.Cooldown(ctx, cd.Key, 500*time.Millisecond); err != nil {
		t.Fatalf("Cooldown: %v", err)
	}
	_, err = b.TryAcquire(ctx, cd)
	robustWantLimit(t, err, throttle.ReasonCooldown)
	patient := cd
	patient.WaitCooldown = true
	release(acquire(wctx, patient))

	// Grants racing their waiters' cancellation: the refunds echo the grant
	// time the server answered.
	refund := throttle.Request{Key: "{corp}/refund", Concurrency: 1, TTL: 10 * time.Second,
		Windows: []throttle.Window{{Limit: 1000, Period: time.Minute}}}
	for range 3 {
		holder := acquire(ctx, refund)
		var wg sync.WaitGroup
		cancels := make([]context.CancelFunc, 20)
		for i := range cancels {
			c, cancel := context.WithCancel(wctx)
			cancels[i] = cancel
			wg.Go(func() {
				if l, err := b.Acquire(c, refund); err == nil {
					checkLease(l, refund.TTL)
					_ = b.Release(ctx, l)
				}
			})
		}
		time.Sleep(30 * time.Millisecond)
		var race sync.WaitGroup
		race.Go(func() {
			if err := b.Release(ctx, holder); err != nil {
				t.Errorf("Release(holder): %v", err)
			}
		})
		for _, c := range cancels {
			race.Go(c)
		}
		race.Wait()
		wg.Wait()
	}

	args, names, replies := rec.snapshot()
	scripts := 0
	for _, n := range names {
		if strings.HasPrefix(n, "evalsha") || strings.HasPrefix(n, "eval") {
			scripts++
		}
	}
	if scripts < 20 || grants.Load() < 15 {
		t.Fatalf("the hook saw %d script calls for %d grants: the workload did not run through it", scripts, grants.Load())
	}
	now := time.Now()
	units := []struct {
		name  string
		now   float64
		slack float64 // two days in the unit
	}{
		{"s", float64(now.Unix()), 2 * 86400},
		{"ms", float64(now.UnixMilli()), 2 * 86400e3},
		{"µs", float64(now.UnixMicro()), 2 * 86400e6},
		{"ns", float64(now.UnixNano()), 2 * 86400e9},
	}
	echoes := 0
	for _, cmd := range args {
		for _, a := range cmd {
			nums, ok := numbersIn(a)
			if !ok {
				t.Errorf("command %v: argument %v of type %T", cmd, a, a)
			}
			for _, x := range nums {
				for _, u := range units {
					if math.Abs(x-u.now) > u.slack {
						continue
					}
					if x == math.Trunc(x) && replies[int64(x)] {
						echoes++ // a time the server answered, sent back
						continue
					}
					t.Errorf("command %v sends %v, a time near now in %s: the client's clock reaches Redis", cmd, a, u.name)
				}
			}
		}
	}
	t.Logf("%d commands checked (%d script calls, %d grants); %d echoes of server times", len(args), scripts, grants.Load(), echoes)
}

// runRestart runs the Redis restart workload with one backend option set.
func runRestart(t *testing.T, opt throttle.RedisOptions) {
	const (
		workers = 50
		slots   = 5
		maxIter = 1000 // per worker: bounds the run
		need    = 200  // successes wanted before the outage and after it
		outage  = 20   // failures (or fallback grants) seen before Redis returns
	)
	fallback := opt.Fallback == throttle.FallBackLocal
	addr, restart, stop := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	b, err := throttle.NewRedis(rdb, opt) // the server is private: no prefix needed
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	r := throttle.Request{Key: "{corp}/restart", Concurrency: slots, TTL: 30 * time.Second}
	localSlots := int64(max(1, int(math.Floor(slots*opt.LocalShare))))

	// phase: 0 before the outage, 1 from the kill until the server is back,
	// 2 after. A lease whose Acquire returned in phase 0 was granted by the
	// old server; one whose Acquire started in phase 2 by the new one; the
	// others may be either and count in no gauge (so each gauge counts a
	// subset of the holders the server that granted them knows).
	var phase atomic.Int32
	var oldHolders, newHolders, localHolders holderGauge
	var before, afterRedis, local, failures, lost atomic.Int64
	stopCh := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stopCh) }) }
	var wg sync.WaitGroup
	workersDone := make(chan struct{})
	defer func() {
		halt()
		wg.Wait()
	}()
	for range workers {
		wg.Go(func() {
			for range maxIter {
				select {
				case <-stopCh:
					return
				default:
				}
				start := phase.Load()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				l, err := b.Acquire(ctx, r)
				cancel()
				end := phase.Load()
				if err != nil {
					switch {
					case errors.Is(err, context.DeadlineExceeded):
						t.Errorf("Acquire hung until its 20s deadline (phase %d→%d): %v", start, end, err)
						return
					case !errors.Is(err, throttle.ErrUnavailable):
						t.Errorf("Acquire (phase %d→%d): %v, want an error matching ErrUnavailable", start, end, err)
						return
					case fallback:
						t.Errorf("Acquire with the local fallback (phase %d→%d): %v", start, end, err)
						return
					case end == 0:
						t.Errorf("Acquire failed before the outage: %v", err)
						return
					}
					failures.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				var g *holderGauge
				isLocal := strings.HasPrefix(l.ID, "local:")
				switch {
				case isLocal:
					g = &localHolders
					local.Add(1)
				case end == 0:
					g = &oldHolders
					before.Add(1)
				case start == 2:
					g = &newHolders
					afterRedis.Add(1)
				}
				if g != nil {
					g.inc()
				}
				time.Sleep(5 * time.Millisecond)
				if g != nil {
					g.dec()
				}
				err = b.Release(context.Background(), l)
				switch {
				case err == nil:
				case isLocal || start == 2:
					t.Errorf("Release of a lease granted (local %v) after the restart: %v", isLocal, err)
				case errors.Is(err, throttle.ErrLeaseNotHeld), errors.Is(err, throttle.ErrUnavailable):
					lost.Add(1) // lost with the old server's data, or released into the outage
				default:
					t.Errorf("Release: %v", err)
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(workersDone)
	}()
	until := func(what string, limit time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.NewTimer(limit)
		defer deadline.Stop()
		for !cond() {
			select {
			case <-workersDone:
				if cond() {
					return
				}
				t.Fatalf("the workers ran out of iterations before %s", what)
			case <-deadline.C:
				t.Fatalf("not %s within %s", what, limit)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}

	until("the successes before the outage", 60*time.Second, func() bool { return before.Load() >= need })
	phase.Store(1)
	stop() // SIGKILL: the data is lost
	if fallback {
		until("the fallback served calls", 30*time.Second, func() bool { return local.Load() >= outage })
	} else {
		until("calls failed in the outage", 30*time.Second, func() bool { return failures.Load() >= outage })
	}
	restart() // starts it again, empty; kill of a stopped server is a no-op
	phase.Store(2)
	until("calls resumed on Redis after the restart", 60*time.Second, func() bool { return afterRedis.Load() >= need })
	halt()
	wg.Wait()

	t.Logf("before: %d, after on Redis: %d, local fallback: %d, failures: %d, leases lost: %d; peak holders old %d, new %d, local %d",
		before.Load(), afterRedis.Load(), local.Load(), failures.Load(), lost.Load(),
		oldHolders.peak.Load(), newHolders.peak.Load(), localHolders.peak.Load())
	if p := oldHolders.peak.Load(); p > slots {
		t.Errorf("%d holders before the restart, over the %d slots", p, slots)
	}
	if p := newHolders.peak.Load(); p > slots {
		t.Errorf("%d holders granted after the restart at once, over the %d slots", p, slots)
	}
	if p := localHolders.peak.Load(); p > localSlots {
		t.Errorf("%d holders through the local fallback at once, over its share %d", p, localSlots)
	}
	if !fallback && local.Load() != 0 {
		t.Errorf("%d leases from a local fallback in FailClosed mode", local.Load())
	}
}

// TestRedisRestart: Redis killed and started again, empty, under load: no
// hang, never over the limit, calls resume when Redis is back; failing
// closed with ErrUnavailable in the outage, or served by the local fallback
// within its share.
func TestRedisRestart(t *testing.T) {
	t.Run("FailClosed", func(t *testing.T) {
		runRestart(t, throttle.RedisOptions{})
	})
	t.Run("FallBackLocal", func(t *testing.T) {
		runRestart(t, throttle.RedisOptions{Fallback: throttle.FallBackLocal, LocalShare: 0.5, RetryRedisAfter: time.Second})
	})
}

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
			rdb := tc.rdb(t)
			rec := newCmdRecorder()
			rdb.AddHook(rec)
			b, _ := robustBackend(t, rdb, throttle.RedisOptions{})
			ctx := context.Background()
			flush := func() {
				t.Helper()
				err := forEachRedisNode(ctx, rdb, func(ctx context.Context, n redis.Cmdable, _ string) error {
					return n.ScriptFlush(ctx).Err()
				})
				if err != nil {
					t.Fatalf("SCRIPT FLUSH: %v", err)
				}
				rec.reset()
			}
			// fellBack checks that the last operation met NOSCRIPT and ran
			// the script with EVAL.
			fellBack := func(op string) {
				t.Helper()
				_, names, _ := rec.snapshot()
				i := slices.IndexFunc(names, func(n string) bool { return strings.HasPrefix(n, "evalsha ERR NOSCRIPT") })
				switch {
				case i >= 0 && !slices.Contains(names[i+1:], "eval"):
					t.Errorf("%s after SCRIPT FLUSH sent %q: EVALSHA refused with NOSCRIPT and no EVAL after it", op, names)
				case i < 0 && tc.strict:
					t.Errorf("%s after SCRIPT FLUSH sent %q, want EVALSHA refused with NOSCRIPT then EVAL", op, names)
				case i < 0:
					t.Logf("%s after SCRIPT FLUSH met no NOSCRIPT (%q): another client reloaded the script", op, names)
				}
			}
			r := throttle.Request{Key: "{corp}/flush", Concurrency: 1, TTL: 10 * time.Second,
				Windows: []throttle.Window{{Limit: 100, Period: time.Minute}}}

			warm, err := b.Acquire(ctx, r) // loads the scripts
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Release(ctx, warm); err != nil {
				t.Fatal(err)
			}

			flush()
			l, err := b.Acquire(ctx, r)
			if err != nil {
				t.Fatalf("Acquire after SCRIPT FLUSH: %v", err)
			}
			fellBack("Acquire")

			flush()
			if l, err = b.Extend(ctx, l, 20*time.Second); err != nil {
				t.Fatalf("Extend after SCRIPT FLUSH: %v", err)
			}
			fellBack("Extend")

			flush()
			_, err = b.TryAcquire(ctx, r)
			robustWantLimit(t, err, throttle.ReasonConcurrency)
			fellBack("TryAcquire")

			// A waiter whose next attempt meets the flushed cache.
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
			flush()
			if err := b.Release(ctx, l); err != nil {
				t.Fatalf("Release after SCRIPT FLUSH: %v", err)
			}
			if err := <-waited; err != nil {
				t.Fatalf("waiter after SCRIPT FLUSH: %v", err)
			}
			fellBack("Release")

			flush()
			if err := b.Cooldown(ctx, r.Key, time.Second); err != nil {
				t.Fatalf("Cooldown after SCRIPT FLUSH: %v", err)
			}
			fellBack("Cooldown")
			_, err = b.TryAcquire(ctx, r)
			robustWantLimit(t, err, throttle.ReasonCooldown)
		})
	}
}

// hashTaggedKey is a throttle key as the backend's Redis key names spell it:
// "{tag}" and the key, the tag being the key's own hash tag, or an FNV-1a hash
// of the key when it has none.
func hashTaggedKey(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return "{" + key[i+1:i+1+j] + "}" + key
		}
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return "{" + strconv.FormatUint(h.Sum64(), 16) + "}" + key
}

// redisKeyShape is the only form a key of the backend may take: the prefix, the
// hash-tagged throttle key, and the kind of data: h (lease holders), c
// (cooldown), q (processes waiting for a slot), w:<period ms> (a rate
// window), e (the epoch of the key's state). Group 1 is the throttle key as hashTaggedKey spells it, group 2 the
// kind.
func redisKeyShape(prefix string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `(.+):(h|c|q|e|w:[0-9]+)$`)
}

// workloadKinds are the kinds of Redis key keysWorkload(d) must leave for
// each throttle key (a q key is allowed, not required).
func workloadKinds(d time.Duration) []string {
	return []string{"c", "e", "h", "w:" + strconv.FormatInt((2*d).Milliseconds(), 10), "w:" + strconv.FormatInt((3*d).Milliseconds(), 10)}
}

// kindsOf returns the sorted kinds of the Redis keys rks, less q.
func kindsOf(prefix string, rks []string) []string {
	shape := redisKeyShape(prefix)
	var kinds []string
	for _, k := range rks {
		if m := shape.FindStringSubmatch(k); m != nil && m[2] != "q" {
			kinds = append(kinds, m[2])
		}
	}
	slices.Sort(kinds)
	return kinds
}

var (
	robustLeaseIDShape = regexp.MustCompile(`^[0-9a-f]{24}$`)
	robustIntegerShape = regexp.MustCompile(`^-?[0-9]+$`)
	robustEpochShape   = regexp.MustCompile(`^[0-9]+:[0-9a-f]{24}$`)
)

// checkKeys checks every key under prefix: it has a TTL, has one of the
// backend's names, and holds only lease (or process) IDs and numbers, so nothing a caller
// could have put in, secrets included. It returns the keys by throttle key
// (as hash-tagged in the name) and the node of each.
func checkKeys(t *testing.T, rdb redis.UniversalClient, prefix string) (map[string][]string, map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shape := redisKeyShape(prefix)
	nodes := scanRedisKeys(t, rdb, prefix)
	byKey := make(map[string][]string)
	for k := range nodes {
		m := shape.FindStringSubmatch(k)
		if m == nil {
			t.Errorf("key %q is not of the backend's shapes", k)
			continue
		}
		byKey[m[1]] = append(byKey[m[1]], k)
		// PTTL: -1 (as -1ns) for a key without a TTL, -2 (-2ns) for a key
		// that expired since the scan.
		if ttl, err := rdb.PTTL(ctx, k).Result(); err != nil {
			t.Errorf("PTTL %s: %v", k, err)
		} else if ttl == -1 {
			t.Errorf("key %s has no TTL: it would never expire when idle", k)
		}
		var values []string
		switch kind := rdb.Type(ctx, k).Val(); kind {
		case "zset":
			zs, err := rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
			if err != nil {
				t.Errorf("ZRANGE %s: %v", k, err)
			}
			for _, z := range zs {
				if id, _ := z.Member.(string); !robustLeaseIDShape.MatchString(id) {
					t.Errorf("key %s holds member %q, not a lease ID", k, z.Member)
				}
				values = append(values, strconv.FormatFloat(z.Score, 'f', -1, 64))
			}
		case "hash":
			h, err := rdb.HGetAll(ctx, k).Result()
			if err != nil {
				t.Errorf("HGETALL %s: %v", k, err)
			}
			for f, v := range h {
				// A window's bookkeeping fields: the oldest bucket counted, the total.
				if f != "lo" && f != "t" && f != "b" && f != "r" {
					values = append(values, f)
				}
				values = append(values, v)
			}
		case "string":
			v, err := rdb.Get(ctx, k).Result()
			switch {
			case err == redis.Nil: // expired since the scan
			case err != nil:
				t.Errorf("GET %s: %v", k, err)
			case strings.HasSuffix(k, ":e"):
				if !robustEpochShape.MatchString(v) {
					t.Errorf("key %s holds %q, not an epoch", k, v)
				}
			default:
				values = append(values, v)
			}
		case "none": // expired since the scan
		default:
			t.Errorf("key %s is a %s", k, kind)
		}
		for _, v := range values {
			if !robustIntegerShape.MatchString(v) {
				t.Errorf("key %s holds %q, not a number", k, v)
			}
		}
	}
	return byKey, nodes
}

// keysWorkload uses a throttle key every way that creates Redis keys:
// concurrency, two windows, a wait for a slot, a cooldown, and a lease left
// to expire (its holder "died"). d is the lease TTL and the cooldown; the
// windows are 2d and 3d long.
func keysWorkload(t *testing.T, b throttle.Backend, key string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	r := throttle.Request{Key: key, Concurrency: 2, TTL: d,
		Windows: []throttle.Window{{Limit: 100, Period: 2 * d}, {Limit: 200, Period: 3 * d}}}
	acquire := func() throttle.Lease {
		t.Helper()
		l, err := b.Acquire(ctx, r)
		if err != nil {
			t.Fatalf("Acquire(%q): %v", key, err)
		}
		return l
	}
	for range 3 {
		if err := b.Release(ctx, acquire()); err != nil {
			t.Fatalf("Release(%q): %v", key, err)
		}
	}
	acquire() // never released
	extra := acquire()
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := b.Acquire(wctx, r) // waits for a slot, in vain
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire(%q) with both slots held = %v, want context.DeadlineExceeded", key, err)
	}
	if err := b.Release(ctx, extra); err != nil {
		t.Fatalf("Release(%q): %v", key, err)
	}
	if err := b.Cooldown(ctx, key, d); err != nil {
		t.Fatalf("Cooldown(%q): %v", key, err)
	}
}

// TestRedisKeysExpireWhenIdle: after a workload, every key has a TTL and
// holds no secret, and once idle every key disappears on its own.
func TestRedisKeysExpireWhenIdle(t *testing.T) {
	for _, tc := range []struct {
		name string
		rdb  func(testing.TB) redis.UniversalClient
	}{{"Single", redistest.Single}, {"Cluster", redistest.Cluster}} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := tc.rdb(t)
			b, prefix := robustBackend(t, rdb, throttle.RedisOptions{})
			corps := []string{"{corpA}/x", "{corpB}/x"}
			for _, k := range corps {
				keysWorkload(t, b, k, time.Second) // checked before the first key expires
			}
			byKey, _ := checkKeys(t, rdb, prefix)
			for _, k := range corps {
				// holders, cooldown and the two windows
				if got, want := kindsOf(prefix, byKey[hashTaggedKey(k)]), workloadKinds(time.Second); !slices.Equal(got, want) {
					t.Errorf("throttle key %q has Redis keys %q, want the kinds %q (and q)", k, byKey[hashTaggedKey(k)], want)
				}
			}
			if len(byKey) != len(corps) {
				t.Errorf("Redis keys for throttle keys %v, want only %q", slices.Sorted(maps.Keys(byKey)), corps)
			}
			if !robustEventually(20*time.Second, func() bool { return len(scanRedisKeys(t, rdb, prefix)) == 0 }) {
				left := scanRedisKeys(t, rdb, prefix)
				for k := range left {
					t.Errorf("key %s still exists long after the last use (PTTL %s)", k, rdb.PTTL(context.Background(), k).Val())
				}
			}
		})
	}
}

// TestRedisClusterKeysSpread: on a cluster, all the Redis keys of one
// throttle key are in one slot, and different corps' keys spread over slots
// and masters.
func TestRedisClusterKeysSpread(t *testing.T) {
	rdb := redistest.Cluster(t)
	b, prefix := robustBackend(t, rdb, throttle.RedisOptions{})
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("{corp%02d}/x", i))
	}
	keys = append(keys, "{corpA}/x", "{corpB}/x", "untagged/x")
	for _, k := range keys {
		keysWorkload(t, b, k, time.Minute) // none expires before the check
	}
	byKey, nodes := checkKeys(t, rdb, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	slotOf := make(map[string]int64) // throttle key -> slot
	masters := make(map[string]bool)
	for _, k := range keys {
		rks := byKey[hashTaggedKey(k)]
		if got, want := kindsOf(prefix, rks), workloadKinds(time.Minute); !slices.Equal(got, want) {
			t.Errorf("throttle key %q has Redis keys %q, want the kinds %q (and q)", k, rks, want)
		}
		for _, rk := range rks {
			slot, err := rdb.ClusterKeySlot(ctx, rk).Result()
			if err != nil {
				t.Fatalf("CLUSTER KEYSLOT %s: %v", rk, err)
			}
			if s, ok := slotOf[k]; ok && s != slot {
				t.Errorf("throttle key %q: Redis key %s in slot %d, another in slot %d: one script could not touch both", k, rk, slot, s)
			}
			slotOf[k] = slot
			masters[nodes[rk]] = true
		}
	}
	slots := make(map[int64]bool)
	for i := range 20 {
		slots[slotOf[keys[i]]] = true
	}
	if len(slots) < 2 {
		t.Errorf("20 corps' keys all in slot(s) %v: corps do not spread", slots)
	}
	if slotOf["{corpA}/x"] == slotOf["{corpB}/x"] {
		t.Errorf("corpA and corpB share slot %d", slotOf["{corpA}/x"])
	}
	if len(masters) < 2 {
		t.Errorf("keys of %d throttle keys all on master(s) %v", len(keys), masters)
	}
	t.Logf("20 corps over %d slots and %d masters", len(slots), len(masters))
}
