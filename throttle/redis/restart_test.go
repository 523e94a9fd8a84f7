package redis_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// restartBackend is one "process": a backend on its own client of addr.
func restartBackend(t *testing.T, addr, prefix string) *throttleredis.Backend {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: prefix, RetryRedisAfter: 20 * time.Millisecond, OpTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		_ = rdb.Close()
	})
	return b
}

// grantLog collects the grant times (the server's clock) of every process.
type grantLog struct {
	mu    sync.Mutex
	times []time.Time
}

func (g *grantLog) add(l throttle.Lease) {
	g.mu.Lock()
	g.times = append(g.times, l.Granted)
	g.mu.Unlock()
}

// worst returns the most grants in any interval (t-period, t].
func (g *grantLog) worst(period time.Duration) int {
	g.mu.Lock()
	ts := slices.Clone(g.times)
	g.mu.Unlock()
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, end := range ts {
		n := 0
		for j := i; j >= 0 && ts[j].After(end.Add(-period)); j-- {
			n++
		}
		most = max(most, n)
	}
	return most
}

// Redis killed (SIGKILL) and restarted empty, no persistence: the processes
// that took grants write them back before taking more, and what a process
// that died took is held as taken until the window has slid past the
// restart, so that in no sliding window does the fleet take more than the
// limit. Two processes live through the restart, one dies before it, and
// one that knew nothing of the key starts using it after the restart.
func TestRedisRestartEmptyKeepsWindows(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	const limit, period = 30, 3 * time.Second
	addr, restart, _ := redistest.StartServer(t)
	prefix := "wt:restart:"
	alive := []*throttleredis.Backend{restartBackend(t, addr, prefix), restartBackend(t, addr, prefix)}
	dead := restartBackend(t, addr, prefix)
	late := restartBackend(t, addr, prefix)
	ctx := context.Background()
	r := throttle.Request{Key: "{corp}/restart", Windows: []throttle.Window{{Limit: limit, Period: period}}}

	var log grantLog
	take := func(b *throttleredis.Backend) error {
		l, err := b.TryAcquire(ctx, r)
		if err == nil {
			log.add(l)
		}
		return err
	}
	fillRestartWindow(t, take, dead, alive)
	if n := len(log.times); n != limit {
		t.Fatalf("%d granted before the restart, want %d", n, limit)
	}
	_ = dead.Close() // it dies: what it took is known to nobody

	restart()
	// The live processes and, once they have answered, the late one ask
	// for as long as two windows (a trigger: what is checked is counts).
	takeAfterRestart(t, take, alive, late, time.Now().Add(2*period))

	if most := log.worst(period); most > limit {
		t.Errorf("%d grants in one sliding window of %s, limit %d", most, period, limit)
	}
	if n := len(log.times) - limit; n == 0 {
		t.Error("nothing granted after the restart in two window periods")
	} else {
		t.Logf("%d granted after the restart; at most %d in a window", n, log.worst(period))
	}
}

// fillRestartWindow fills the window with take: the dead process 6, the
// live ones the rest, until refused.
func fillRestartWindow(t *testing.T, take func(*throttleredis.Backend) error, dead *throttleredis.Backend, alive []*throttleredis.Backend) {
	t.Helper()
	for range 6 {
		if err := take(dead); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; ; i++ {
		err := take(alive[i%2])
		if errors.Is(err, throttle.ErrLimited) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// takeAfterRestart has the live processes and, once they have all answered,
// the late one take until stop, each trying every 5 ms: some 600 tries a
// period against the 30 grants it allows, so the window stays full. A
// process whose own probe has not yet seen Redis answer is refused at once
// with ErrUnavailable, the live ones and the late one alike; the late one
// must reach Redis before stop.
func takeAfterRestart(t *testing.T, take func(*throttleredis.Backend) error, alive []*throttleredis.Backend, late *throttleredis.Backend, stop time.Time) {
	t.Helper()
	// takeUntil has b take until stop, calls reached at its first answer
	// from Redis, and reports whether one came.
	takeUntil := func(b *throttleredis.Backend, reached func()) bool {
		answered := false
		for time.Now().Before(stop) {
			err := take(b)
			if err != nil && !errors.Is(err, throttle.ErrLimited) && !errors.Is(err, throttle.ErrUnavailable) {
				t.Error(err)
				return answered
			}
			if !answered && !errors.Is(err, throttle.ErrUnavailable) {
				answered = true
				reached()
			}
			time.Sleep(5 * time.Millisecond)
		}
		return answered
	}
	var wg sync.WaitGroup
	answered := make(chan struct{}, len(alive))
	for _, b := range alive {
		wg.Go(func() {
			if !takeUntil(b, func() { answered <- struct{}{} }) {
				t.Error("a live process never reached Redis after the restart")
				answered <- struct{}{} // the late one need not wait for it
			}
		})
	}
	for range alive {
		<-answered
	}
	lateAnswered := false
	wg.Go(func() { lateAnswered = takeUntil(late, func() {}) })
	wg.Wait()
	if !lateAnswered {
		t.Error("the late process never reached Redis after the restart")
	}
}

// A cooldown a process set survives a restart of Redis: the process writes
// it back with its grants, and another process is refused by it.
func TestRedisRestartEmptyKeepsCooldown(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	addr, restart, _ := redistest.StartServer(t)
	prefix := "wt:restartcd:"
	b1, b2 := restartBackend(t, addr, prefix), restartBackend(t, addr, prefix)
	ctx := context.Background()
	r := throttle.Request{Key: "{corp}/cooled", Windows: []throttle.Window{{Limit: 1000, Period: time.Hour}}}
	if _, err := b1.TryAcquire(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := b1.Cooldown(ctx, r.Key, time.Hour); err != nil {
		t.Fatal(err)
	}

	restart()
	// b1 learns of the loss on its next call, and writes back first.
	if !robustEventually(30*time.Second, func() bool {
		_, err := b1.TryAcquire(ctx, r)
		return !errors.Is(err, throttle.ErrUnavailable)
	}) {
		t.Fatal("Redis did not answer after the restart")
	}
	var le *throttle.LimitError
	if !robustEventually(30*time.Second, func() bool {
		_, err := b2.TryAcquire(ctx, r)
		return errors.As(err, &le)
	}) {
		t.Fatal("the other process is not refused after the restart")
	}
	if le.Reason != throttle.ReasonCooldown || le.RetryAfter < 50*time.Minute {
		t.Errorf("after the restart: %v, want the hour's cooldown", le)
	}
}

// A Redis that hangs (SIGSTOP) and comes back (SIGCONT): a release made
// while it hung, once the backend knew, fails nothing and is made when
// Redis answers, so that the slot (whose TTL is an hour) is free for
// another process.
func TestRedisPausedReleaseRetried(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	addr, pause := redistest.StartPausableServer(t)
	prefix := "wt:paused:"
	b1, b2 := restartBackend(t, addr, prefix), restartBackend(t, addr, prefix)
	ctx := context.Background()
	r := throttle.Request{Key: "{corp}/paused", Concurrency: 1, TTL: time.Hour}
	held, err := b1.Acquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}

	resume := pause()
	// A call times out (OpTimeout) and the backend knows Redis is away.
	if _, err := b1.TryAcquire(ctx, r); !errors.Is(err, throttle.ErrUnavailable) {
		t.Fatalf("TryAcquire with Redis stopped: %v, want ErrUnavailable", err)
	}
	if err := b1.Release(ctx, held); err != nil { // kept, and made when Redis answers
		t.Fatalf("Release with Redis stopped: %v, want nil", err)
	}
	resume()

	if !robustEventually(30*time.Second, func() bool {
		l, err := b2.TryAcquire(ctx, r)
		if err != nil {
			return false
		}
		return b2.Release(ctx, l) == nil
	}) {
		t.Fatal("the slot released while Redis was stopped is still held after it resumed")
	}
}

// The restart above for a request with Members: each member's window is
// written back by the processes that counted on it, under the request's
// one epoch, so that no member goes over its window because of the
// restart; a member nobody had counted on is served at once. The state is
// lost by a restart (the processes see Redis away) and by a flush (they
// learn it from the script's answer).
func TestRedisRestartEmptyKeepsMemberWindows(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	for _, flush := range []bool{false, true} {
		t.Run(map[bool]string{false: "Restart", true: "Flush"}[flush], func(t *testing.T) {
			t.Parallel()
			memberWindowsAcrossALoss(t, flush)
		})
	}
}

func memberWindowsAcrossALoss(t *testing.T, flush bool) {
	const limit, period = 30, 3 * time.Second
	addr, restart, _ := redistest.StartServer(t)
	prefix := "wt:restartm:"
	alive := []*throttleredis.Backend{restartBackend(t, addr, prefix), restartBackend(t, addr, prefix)}
	dead := restartBackend(t, addr, prefix)
	late := restartBackend(t, addr, prefix)
	ctx := context.Background()
	ws := []throttle.Window{{Limit: limit, Period: period}}
	logs := map[string]*grantLog{"a": {}, "b": {}, "new": {}}
	members := []string{"a", "b"}
	take := func(b *throttleredis.Backend) error {
		r := throttle.Request{Key: "{corp}/send", Windows: ws, Members: members}
		l, err := b.TryAcquire(ctx, r)
		if err == nil {
			for _, m := range r.Members {
				logs[m].add(l)
			}
		}
		return err
	}
	fillRestartWindow(t, take, dead, alive)
	_ = dead.Close()

	if flush {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		if err := rdb.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	} else {
		restart()
	}
	members = []string{"b", "a"}
	takeAfterRestart(t, take, alive, late, time.Now().Add(2*period))
	for m, log := range logs {
		if most := log.worst(period); most > limit {
			t.Errorf("member %s: %d grants in one sliding window of %s, limit %d", m, most, period, limit)
		}
	}
	if n := len(logs["a"].times) - limit; n == 0 {
		t.Error("nothing granted after the loss in two window periods")
	}
	// A member no process had counted on goes at once.
	members = []string{"new"}
	if err := take(alive[0]); err != nil {
		t.Errorf("a member nobody counted on before the loss: %v", err)
	}
}
