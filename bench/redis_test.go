package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/jarcoal/httpmock"
	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/redisstore"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

const envAddr = "REDIS_ADDR"

// The SDK's limits for a tag API (DefaultLimits): 5 in flight per corp,
// 10,000 a minute, 150,000 an hour; leases live 15 s unless renewed.
var sdkWindows = []throttle.Window{{Limit: 10000, Period: time.Minute}, {Limit: 150000, Period: time.Hour}}

const sdkTTL = wecom.DefaultLeaseTTL

// newRedis returns a client to REDIS_ADDR, or skips loudly when it is unset.
func newRedis(tb testing.TB) *redis.Client {
	tb.Helper()
	addr := os.Getenv(envAddr)
	if addr == "" {
		msg := "\n*** SKIPPED: " + envAddr + " is unset. These benchmarks measure a real Redis:\n" +
			"***   " + envAddr + "=127.0.0.1:6379 go test -run Test -v -count=1 .\n" +
			"***   " + envAddr + "=127.0.0.1:6379 go test -run XXX -bench . -benchtime 3s .\n"
		fmt.Fprint(os.Stderr, msg)
		tb.Skip(msg)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	tb.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		tb.Fatalf("Redis at %s (%s) does not answer PING: %v", addr, envAddr, err)
	}
	return rdb
}

// uniquePrefix returns a fresh key prefix; every key under it (and redis_rate's
// "rate:"+prefix keys) is deleted when the test ends.
func uniquePrefix(tb testing.TB, rdb redis.UniversalClient) string {
	tb.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := "wecombench:" + hex.EncodeToString(b[:]) + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, pat := range []string{p + "*", "rate:" + p + "*"} {
			keys, err := scanKeys(ctx, rdb, pat)
			if err != nil {
				tb.Errorf("cleanup: scan %s: %v", pat, err)
				continue
			}
			if len(keys) > 0 {
				if err := rdb.Del(ctx, keys...).Err(); err != nil {
					tb.Errorf("cleanup: del: %v", err)
				}
			}
		}
	})
	return p
}

func scanKeys(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	var keys []string
	it := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	for it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	sort.Strings(keys)
	return keys, it.Err()
}

func newLimiter(tb testing.TB, rdb redis.UniversalClient, prefix string) *throttleredis.Backend {
	tb.Helper()
	l, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	return l
}

// ---------------------------------------------------------------------------
// Throughput on one key: ours against redis_rate.

// BenchmarkRedisAcquireRelease runs throttleredis.Backend Acquire+Release pairs on one
// key whose limits never refuse. One op is one pair.
func BenchmarkRedisAcquireRelease(b *testing.B) { benchAcquireRelease(b, 1) }

// BenchmarkRedisRateAllow runs redis_rate's Allow on one key whose limit never
// refuses, on the same Redis with the same parallelism. One op is one Allow.
func BenchmarkRedisRateAllow(b *testing.B) { benchRateAllow(b, 1) }

// The same two with 8 goroutines per GOMAXPROCS instead of 1.
func BenchmarkRedisAcquireReleaseP8(b *testing.B) { benchAcquireRelease(b, 8) }
func BenchmarkRedisRateAllowP8(b *testing.B)      { benchRateAllow(b, 8) }

func benchAcquireRelease(b *testing.B, parallelism int) {
	rdb := newRedis(b)
	lim := newLimiter(b, rdb, uniquePrefix(b, rdb))
	req := throttle.Request{
		Key:         "{wwbench}/bench",
		Concurrency: 1 << 20,
		TTL:         sdkTTL,
		Windows:     []throttle.Window{{Limit: 1 << 40, Period: time.Minute}, {Limit: 1 << 40, Period: time.Hour}},
	}
	ctx := context.Background()
	// Load the scripts once, outside the timing.
	l, err := lim.Acquire(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	if err := lim.Release(ctx, l); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l, err := lim.Acquire(ctx, req)
			if err != nil {
				b.Error(err)
				return
			}
			if err := lim.Release(ctx, l); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

func benchRateAllow(b *testing.B, parallelism int) {
	rdb := newRedis(b)
	key := uniquePrefix(b, rdb) + "rr"
	lim := redis_rate.NewLimiter(rdb)
	limit := redis_rate.PerMinute(1 << 30)
	ctx := context.Background()
	if _, err := lim.Allow(ctx, key, limit); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := lim.Allow(ctx, key, limit)
			if err != nil {
				b.Error(err)
				return
			}
			if res.Allowed != 1 {
				b.Errorf("redis_rate refused: %+v", res)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "allows/s")
}

// ---------------------------------------------------------------------------
// Round trips per SDK call.

// countHook counts what a go-redis client sends: every Process is one round
// trip, every pipeline one round trip of several commands.
type countHook struct {
	mu         sync.Mutex
	roundTrips int
	commands   int
	byName     map[string]int
}

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.roundTrips++
		h.commands++
		h.byName[strings.ToUpper(cmd.Name())]++
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.roundTrips++
		h.commands += len(cmds)
		for _, c := range cmds {
			h.byName["PIPELINE:"+strings.ToUpper(c.Name())]++
		}
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

type counts struct {
	roundTrips, commands int
	byName               map[string]int
}

// take returns the counts so far and zeroes them.
func (h *countHook) take() counts {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := counts{h.roundTrips, h.commands, h.byName}
	h.roundTrips, h.commands, h.byName = 0, 0, map[string]int{}
	return c
}

func (c counts) String() string {
	names := make([]string, 0, len(c.byName))
	for n := range c.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, c.byName[n]))
	}
	return strings.Join(parts, ", ")
}

func TestRoundTripsPerCall(t *testing.T) {
	rdb := newRedis(t)
	prefix := uniquePrefix(t, rdb)
	hook := &countHook{byName: map[string]int{}}
	rdb.AddHook(hook)
	lim := newLimiter(t, rdb, prefix+"throttle:")
	store, err := redisstore.New(rdb, prefix+"token:")
	if err != nil {
		t.Fatal(err)
	}
	m, err := mock.New(mock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const corp, secret = "wwbench", "bench-secret"
	m.AddApp(corp, secret)
	mt := httpmock.NewMockTransport()
	m.Register(mt, "http://wecom.mock")
	c, err := wecom.New(corp, secret, wecom.WithLimiter(lim), wecom.WithTokenStore(store),
		wecom.WithBaseURL("http://wecom.mock"), wecom.WithTransport(mt))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Warm-up: token fetched and stored, tag created, scripts loaded.
	g, err := c.CustomerTags.Add(ctx, wecom.CorpTagAddRequest{GroupName: "bench", Tags: []wecom.CorpTagSpec{{Name: "bench"}}})
	if err != nil {
		t.Fatal(err)
	}
	tagID := g.Tags[0].ID
	for i := range 10 {
		if _, err := c.Tags.List(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: "zhangsan", ExternalUserID: fmt.Sprintf("warm%d", i), AddTags: []string{tagID}}); err != nil {
			t.Fatal(err)
		}
	}
	warm := hook.take()
	t.Logf("warm-up (token fetch, add_corp_tag, 10 tag/list, 10 mark_tag): %d round trips: %s", warm.roundTrips, warm)

	const n = 1000
	for range n {
		if _, err := c.Tags.List(ctx); err != nil {
			t.Fatal(err)
		}
	}
	list := hook.take()
	for i := range n {
		if err := c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: "zhangsan", ExternalUserID: fmt.Sprintf("wm%08d", i), AddTags: []string{tagID}}); err != nil {
			t.Fatal(err)
		}
	}
	mark := hook.take()

	// Alone, a call takes each of its slots in a script (a customer's
	// lock apart from the API's slot, see throttle.Request.With) and
	// releases them all in one, sent a moment later.
	report := func(api string, c counts, target int, what string) {
		rt := float64(c.roundTrips) / n
		t.Logf("%-10s %d calls, one at a time: %.3f round trips/call, %.3f commands/call (target %d: %s) [%s]",
			api, n, rt, float64(c.commands)/n, target, what, c)
		if rt > float64(target)*1.01 { // within 1%
			t.Errorf("%s: %.3f round trips per call, target %d", api, rt, target)
		}
	}
	report("tag/list", list, 2, "acquire+release")
	report("mark_tag", mark, 3, "lock, API slot, one release of both")

	// Under contention: 32 workers share the 5 slots, as in examples/bulktag.
	// A release hands the API's slot and a new customer's lock to the next
	// waiting call in one script, so a call costs about one.
	m.SetLatency(2 * time.Millisecond)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > n {
					return
				}
				if err := c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: "zhangsan", ExternalUserID: fmt.Sprintf("wc%08d", i), AddTags: []string{tagID}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	busy := hook.take()
	setup := busy.byName["HELLO"] + busy.byName["PIPELINE:CLIENT"]
	t.Logf("mark_tag   %d calls, 32 workers, 5 slots, mock latency 2ms: %.3f round trips/call, of which %.3f limiter scripts/call (target 1.5) and %d round trips opening %d new pool connections [%s]",
		n, float64(busy.roundTrips)/n, float64(busy.byName["EVALSHA"]+busy.byName["EVAL"])/n, setup, busy.byName["HELLO"], busy)
	if scripts := float64(busy.byName["EVALSHA"]+busy.byName["EVAL"]) / n; scripts > 1.5 {
		t.Errorf("mark_tag under contention: %.3f limiter scripts per call, target 1.5", scripts)
	}
	if s := m.Stats(); s.Refusals[wecom.CodeConcurrencyLimited] != 0 {
		t.Errorf("mock answered 45033 %d times", s.Refusals[wecom.CodeConcurrencyLimited])
	}
}

// ---------------------------------------------------------------------------
// Hand-off latency between processes.

const (
	envChild   = "WECOM_BENCH_HANDOFF_CHILD"
	envPrefix  = "WECOM_BENCH_HANDOFF_PREFIX"
	envWindows = "WECOM_BENCH_HANDOFF_WINDOWS"
	handoffKey = "{wwbench}/handoff"
)

func handoffRequest(windows bool) throttle.Request {
	r := throttle.Request{Key: handoffKey, Concurrency: 1, TTL: sdkTTL}
	if windows {
		r.Windows = sdkWindows
	}
	return r
}

// handoffChild is the other process: on each "go" from stdin it says it is
// about to acquire ("W"), acquires, prints the grant time ("G ns"), releases,
// and says so ("R").
func handoffChild(t *testing.T) {
	rdb := newRedis(t)
	lim, err := throttleredis.New(rdb, throttleredis.Options{Prefix: os.Getenv(envPrefix)})
	if err != nil {
		fmt.Printf("E %v\n", err)
		return
	}
	defer lim.Close()
	req := handoffRequest(os.Getenv(envWindows) == "1")
	fmt.Println("READY")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() != "go" {
			return
		}
		fmt.Println("W")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		l, err := lim.Acquire(ctx, req)
		granted := time.Now().UnixNano()
		cancel()
		if err != nil {
			fmt.Printf("E acquire: %v\n", err)
			return
		}
		fmt.Printf("G %d\n", granted)
		if err := lim.Release(context.Background(), l); err != nil {
			fmt.Printf("E release: %v\n", err)
			return
		}
		fmt.Println("R")
	}
}

func TestHandoffLatency(t *testing.T) {
	if os.Getenv(envChild) == "1" {
		handoffChild(t)
		return
	}
	for _, busy := range []bool{false, true} {
		for _, windows := range []bool{false, true} {
			name := "concurrency 1, no windows (a per-customer key)"
			if windows {
				name = "concurrency 1 + windows 10000/min, 150000/h (an API key)"
			}
			if busy {
				name += ", the releasing process has a waiter of its own"
			} else {
				name += ", the releasing process has no other waiter"
			}
			t.Run(fmt.Sprintf("windows=%v,busy=%v", windows, busy), func(t *testing.T) { handoff(t, name, windows, busy) })
		}
	}
}

// handoff measures hand-offs from this process to a child process waiting on
// the same key. With busy, a waiter of this process queues behind the child's
// before each release, so that the release is a hand-over that yields, after
// the local turns; without, a plain release. Either wakes
// the child, which then acquires.
func handoff(t *testing.T, name string, windows, busy bool) {
	rdb := newRedis(t)
	prefix := uniquePrefix(t, rdb)
	lim := newLimiter(t, rdb, prefix)
	req := handoffRequest(windows)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	held, err := lim.Acquire(ctx, req)
	if err != nil {
		t.Fatal(err)
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^TestHandoffLatency$", "-test.count=1")
	w := "0"
	if windows {
		w = "1"
	}
	cmd.Env = append(os.Environ(), envChild+"=1", envPrefix+"="+prefix, envWindows+"="+w)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	defer func() {
		_, _ = io.WriteString(stdin, "quit\n")
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	expect := func(want string) string {
		t.Helper()
		timeout := time.After(15 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("child exited while %q was expected", want)
				}
				if strings.HasPrefix(l, "E ") {
					t.Fatalf("child: %s", l)
				}
				if l == want || strings.HasPrefix(l, want+" ") {
					return l
				}
			case <-timeout:
				t.Fatalf("child did not say %q within 15s", want)
			}
		}
	}
	expect("READY")

	const warm, rounds = 20, 500
	var lat, rel []time.Duration
	for i := range warm + rounds {
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
		expect("W")
		waitQueued(t, rdb, prefix, 1)    // the child's acquire is refused and waits
		time.Sleep(2 * time.Millisecond) // and its notice that it waits reaches this process
		var own chan acquired
		grantLine := "" // the child's "G" line, when read already
		ownWaiter := func() {
			own = make(chan acquired, 1)
			go func() {
				l, err := lim.Acquire(ctx, req)
				own <- acquired{l, err}
			}()
		}
		if busy {
			ownWaiter()
			waitQueued(t, rdb, prefix, 2) // refused too, and queued behind the child
		}
		released := time.Now().UnixNano()
		if err := lim.Release(ctx, held); err != nil {
			t.Fatal(err)
		}
		releaseDone := time.Now().UnixNano()
		// The local turns (REDIS.md, The hot path): a slot Redis granted
		// may go on to this process's own waiters a few times, at once and
		// without Redis, before a hand-over yields it. While it does, that
		// waiter releases it with another waiter of this process queued
		// behind, until the child says it has the slot: the hand-off is
		// measured from the release that yielded.
		for busy && grantLine == "" {
			select {
			case got := <-own:
				if got.err != nil {
					t.Fatal(got.err)
				}
				ownWaiter()
				time.Sleep(2 * time.Millisecond) // a trigger, not an assertion: it asks, is refused and waits
				released = time.Now().UnixNano()
				if err := lim.Release(ctx, got.l); err != nil {
					t.Fatal(err)
				}
				releaseDone = time.Now().UnixNano()
			case l, ok := <-lines:
				switch {
				case !ok || strings.HasPrefix(l, "E "):
					t.Fatalf("child: %q", l)
				case strings.HasPrefix(l, "G "):
					grantLine = l
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the slot went neither to this process's waiter nor to the child within 15s")
			}
		}
		g := grantLine
		if g == "" {
			g = expect("G")
		}
		granted, err := strconv.ParseInt(strings.TrimPrefix(g, "G "), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		expect("R")
		if busy {
			got := <-own // woken by the child's release
			held, err = got.l, got.err
		} else {
			held, err = lim.Acquire(ctx, req)
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= warm {
			lat = append(lat, time.Duration(granted-released))
			rel = append(rel, time.Duration(releaseDone-released))
		}
	}
	if err := lim.Release(ctx, held); err != nil {
		t.Fatal(err)
	}
	// Baseline: one PING round trip on this machine, at the same cadence.
	var ping []time.Duration
	for range rounds {
		time.Sleep(2 * time.Millisecond)
		t0 := time.Now()
		if err := rdb.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		ping = append(ping, time.Since(t0))
	}
	slices.Sort(lat)
	slices.Sort(rel)
	slices.Sort(ping)
	p := func(s []time.Duration, q float64) time.Duration {
		return s[min(len(s)-1, int(q*float64(len(s))))]
	}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	t.Logf("%s: %d hand-offs to another process, from Release called to the waiter's Acquire returning:", name, rounds)
	t.Logf("    p50 %v, p90 %v, p99 %v, max %v, mean %v", r(p(lat, .5)), r(p(lat, .9)), r(p(lat, .99)), r(lat[len(lat)-1]), r(sum/time.Duration(len(lat))))
	t.Logf("    of which the releasing Release call itself (one round trip): p50 %v, p99 %v", r(p(rel, .5)), r(p(rel, .99)))
	t.Logf("    baseline, one Redis PING round trip from this process: p50 %v, p90 %v, p99 %v, max %v", r(p(ping, .5)), r(p(ping, .9)), r(p(ping, .99)), r(ping[len(ping)-1]))
	t.Log("    (a hand-off is the release or hand-over script with its PUBLISH, the notice reaching the other process, and its acquire script: two round trips and a push)")
	if p99 := p(lat, .99); p99 >= 2*time.Millisecond {
		t.Logf("    TARGET MISSED: p99 %v is %v over 2ms", r(p99), r(p99-2*time.Millisecond))
	} else {
		t.Logf("    target met: p99 %v < 2ms", r(p99))
	}
}

// waitQueued waits until n processes queue for the hand-off key's slot
// in Redis: a fixed sleep let this process's own waiter queue first on a
// loaded machine, and keep the slot the child waited for.
func waitQueued(t *testing.T, rdb redis.UniversalClient, prefix string, n int64) {
	t.Helper()
	key := prefix + "{" + handoffKey[1:strings.IndexByte(handoffKey, '}')] + "}" + handoffKey + ":q"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Microsecond) {
		got, err := rdb.ZCard(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes queue on %s, want %d", got, key, n)
		}
	}
}

func r(d time.Duration) time.Duration { return d.Round(time.Microsecond) }

type acquired struct {
	l   throttle.Lease
	err error
}

// ---------------------------------------------------------------------------
// Memory per (corp, API).

type keyMem struct {
	key, typ     string
	bytes, items int64
	pttl         time.Duration
}

// memoryUnder sums MEMORY USAGE (exact: SAMPLES 0) of every key under prefix.
func memoryUnder(t *testing.T, rdb *redis.Client, prefix string) (total int64, keys []keyMem) {
	t.Helper()
	ctx := context.Background()
	names, err := scanKeys(ctx, rdb, prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range names {
		n, err := rdb.MemoryUsage(ctx, k, 0).Result()
		if errors.Is(err, redis.Nil) {
			continue // expired meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		km := keyMem{key: strings.TrimPrefix(k, prefix), bytes: n}
		km.typ, _ = rdb.Type(ctx, k).Result()
		switch km.typ {
		case "hash":
			km.items, _ = rdb.HLen(ctx, k).Result()
		case "zset":
			km.items, _ = rdb.ZCard(ctx, k).Result()
		}
		km.pttl, _ = rdb.PTTL(ctx, k).Result()
		total += n
		keys = append(keys, km)
	}
	return total, keys
}

func logMemory(t *testing.T, what string, total int64, keys []keyMem) {
	t.Logf("%s: %d key(s), %d bytes", what, len(keys), total)
	for _, k := range keys {
		t.Logf("    %-60s %-6s %4d entries %6d bytes, expires in %v", k.key, k.typ, k.items, k.bytes, k.pttl.Round(time.Millisecond))
	}
}

// saturate runs acquisitions at full speed with short holds for d, with 8
// goroutines, and returns how many were granted. A worker stops when the
// windows refuse it for longer than the time left.
func saturate(t *testing.T, lim *throttleredis.Backend, req throttle.Request, d time.Duration) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var granted, refused atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				l, err := lim.Acquire(ctx, req)
				var le *throttle.LimitError
				switch {
				case errors.As(err, &le):
					refused.Add(1)
					time.Sleep(min(time.Until(deadline(ctx)), time.Second))
					continue
				case err != nil:
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				granted.Add(1)
				time.Sleep(100 * time.Microsecond)
				if err := lim.Release(context.Background(), l); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("saturated %s for %v: %d granted, %d refusals by the windows", req.Key, d, granted.Load(), refused.Load())
	return granted.Load()
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

func TestMemoryPerKey(t *testing.T) {
	rdb := newRedis(t)

	t.Run("SDK limits", func(t *testing.T) {
		prefix := uniquePrefix(t, rdb)
		lim := newLimiter(t, rdb, prefix)
		req := throttle.Request{Key: "{wwbench}/cgi-bin/externalcontact/mark_tag", Concurrency: 5, TTL: sdkTTL, Windows: sdkWindows}
		ctx := context.Background()
		// While 5 leases are held: the holders ZSET is there too.
		var ls []throttle.Lease
		for range 5 {
			l, err := lim.Acquire(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, l)
		}
		total, keys := memoryUnder(t, rdb, prefix)
		logMemory(t, "(corp, API) with 5 leases held, 5 acquisitions so far", total, keys)
		// A 6th caller waits: its process queues in Redis for the next slot.
		sixth := make(chan error, 1)
		go func() {
			l, err := lim.Acquire(ctx, req)
			if err == nil {
				err = lim.Release(ctx, l)
			}
			sixth <- err
		}()
		time.Sleep(100 * time.Millisecond)
		total, keys = memoryUnder(t, rdb, prefix)
		logMemory(t, "(corp, API) with 5 leases held and a 6th caller waiting", total, keys)
		for _, l := range ls {
			if err := lim.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-sixth; err != nil {
			t.Fatal(err)
		}
		saturate(t, lim, req, 10*time.Second)
		total, keys = memoryUnder(t, rdb, prefix)
		logMemory(t, "(corp, API) after 10 s at full speed, every lease released", total, keys)
		if err := lim.Cooldown(ctx, req.Key, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		total, keys = memoryUnder(t, rdb, prefix)
		logMemory(t, "(corp, API) during a cooldown (45009 seen)", total, keys)
	})

	t.Run("every bucket live", func(t *testing.T) {
		// Periods scaled to 1 s and 6 s, so that 10 s of acquisitions fill all
		// 100 (+1 or 2 not yet expired) buckets of both windows, as a minute
		// and an hour of steady traffic would with the real windows. The
		// bucket numbers here have 1-3 more digits than the real ones, so this
		// slightly over-estimates the real bound.
		prefix := uniquePrefix(t, rdb)
		lim := newLimiter(t, rdb, prefix)
		req := throttle.Request{Key: "{wwbench}/cgi-bin/externalcontact/mark_tag", Concurrency: 5, TTL: sdkTTL,
			Windows: []throttle.Window{{Limit: 1 << 30, Period: time.Second}, {Limit: 1 << 30, Period: 6 * time.Second}}}
		saturate(t, lim, req, 10*time.Second)
		total, keys := memoryUnder(t, rdb, prefix)
		logMemory(t, "(corp, API), both windows' hashes at their bound", total, keys)
		for _, k := range keys {
			// A window HASH holds its buckets and two bookkeeping fields, lo and t.
			if k.typ == "hash" && k.items-2 > throttle.BucketsPerWindow+2 {
				t.Errorf("%s holds %d buckets, more than %d", k.key, k.items-2, throttle.BucketsPerWindow+2)
			}
		}
	})

	t.Run("per-customer key", func(t *testing.T) {
		prefix := uniquePrefix(t, rdb)
		lim := newLimiter(t, rdb, prefix)
		req := throttle.Request{Key: "{wwbench}/cgi-bin/externalcontact/mark_tag|zhangsan|wm00000001", Concurrency: 1, TTL: sdkTTL}
		ctx := context.Background()
		l, err := lim.Acquire(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		total, keys := memoryUnder(t, rdb, prefix)
		logMemory(t, "mark_tag per-customer key while its lease is held", total, keys)
		if err := lim.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := lim.Close(); err != nil { // sends the release no waiter wanted, which waits a moment
			t.Fatal(err)
		}
		total, keys = memoryUnder(t, rdb, prefix)
		logMemory(t, "mark_tag per-customer key after its lease is released", total, keys)
		if len(keys) != 0 {
			t.Errorf("%d key(s) left behind by a released per-customer lease", len(keys))
		}
	})
}
