package redis_test

// Redis killed and started again, empty, under load: no hang, never over
// the limit, calls resume when Redis is back, waiting for it (failing
// closed) or served by the local fallback in the outage.

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// holderGauge counts holders and remembers the most there ever were.
type holderGauge struct{ cur, peak atomic.Int64 }

func (g *holderGauge) inc() {
	n := g.cur.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
}

func (g *holderGauge) dec() { g.cur.Add(-1) }

// TestRedisRestart: Redis killed and started again, empty, under load: no
// hang, never over the limit, calls resume when Redis is back; failing
// closed, every call queued in the outage waits for Redis (told to its
// OnStall) and none fails, or the local fallback serves them within its
// share.
func TestRedisRestart(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	t.Run("FailClosed", func(t *testing.T) {
		runRestart(t, throttleredis.Options{})
	})
	t.Run("FallBackLocal", func(t *testing.T) {
		runRestart(t, throttleredis.Options{Fallback: throttleredis.FallBackLocal, LocalShare: 0.5, RetryRedisAfter: time.Second})
	})
}

// runRestart runs the Redis restart workload with one backend option set.
func runRestart(t *testing.T, opt throttleredis.Options) {
	const (
		workers = 50
		slots   = 5
		maxIter = 1000 // per worker: bounds the run
		need    = 200  // successes wanted before the outage and after it
		outage  = 20   // stalls on Redis told (or fallback grants) before Redis returns
	)
	addr, restart, stop := redistest.StartServer(t)
	w := newRestartRun(t, addr, opt, slots)
	localSlots := int64(max(1, int(math.Floor(slots*opt.LocalShare))))
	defer func() {
		w.halt()
		w.wg.Wait()
	}()
	w.start(workers, maxIter)

	w.until("the successes before the outage", 60*time.Second, func() bool { return w.before.Load() >= need })
	w.phase.Store(1)
	stop() // SIGKILL: the data is lost
	if w.fallback {
		w.until("the fallback served calls", 30*time.Second, func() bool { return w.local.Load() >= outage })
	} else {
		w.until("calls waited on Redis in the outage", 30*time.Second, func() bool { return w.waiting.Load() >= outage })
	}
	w.restartAt = time.Now().Truncate(time.Millisecond) // Granted: the server's ms
	restart()                                           // starts it again, empty; kill of a stopped server is a no-op
	w.phase.Store(2)
	w.until("calls resumed on Redis after the restart", 60*time.Second, func() bool { return w.afterRedis.Load() >= need })
	if !w.fallback && w.waited.Load() == 0 {
		t.Error("no Acquire made before the restart was granted after it: none waited for Redis")
	}
	w.halt()
	w.wg.Wait()
	w.check(slots, localSlots)
	w.slotsFreed(slots)
}

// slotsFreed checks that every slot of the new server frees well before
// the leases' TTL once the workers are done: the releases kept for the
// probe were made.
func (w *restartRun) slotsFreed(slots int) {
	t := w.t
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(w.r.TTL / 3); ; time.Sleep(100 * time.Millisecond) {
		var got []throttle.Lease
		for range slots {
			l, err := w.b.TryAcquire(ctx, w.r)
			if err != nil {
				break
			}
			got = append(got, l)
		}
		onRedis := 0
		for _, l := range got {
			if !strings.HasPrefix(l.ID, "local:") {
				onRedis++
			}
			_ = w.b.Release(ctx, l)
		}
		if onRedis == slots {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d of %d slots free on Redis %s after the workers stopped: releases kept for the probe were not made", onRedis, slots, w.r.TTL/3)
			return
		}
	}
}

// restartRun is the state of one run of runRestart's workload.
//
// phase: 0 before the outage, 1 from the kill until the server is back, 2
// after. A lease whose Acquire returned in phase 0 was granted by the old
// server; one whose Acquire started in phase 2 by the new one. One whose
// Acquire started before and returned in phase 2 waited on Redis across
// the outage and was granted by the new one, unless it was granted
// before the restart (by the server's clock): an old server's grant whose
// caller ran late, under load, a slot held across the restart (which the
// new server does not count, REDIS.md). The others may be either and count
// in no gauge (so each gauge counts a subset of the holders the server
// that granted them knows).
type restartRun struct {
	t        *testing.T
	b        *throttleredis.Backend
	r        throttle.Request
	fallback bool

	phase                                atomic.Int32
	restartAt                            time.Time // set before phase 2
	oldHolders, newHolders, localHolders holderGauge
	before, afterRedis, local, waited    atomic.Int64 // waited: on Redis in the outage, then granted
	waiting                              atomic.Int64 // stalls on Redis told (ReasonUnavailable)
	lost                                 atomic.Int64
	stopCh                               chan struct{}
	stopOnce                             sync.Once
	wg                                   sync.WaitGroup
	workersDone                          chan struct{}
}

// newRestartRun sets up a backend on the private server at addr, and the
// request of the workload.
func newRestartRun(t *testing.T, addr string, opt throttleredis.Options, slots int) *restartRun {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	b, err := throttleredis.New(rdb, opt) // the server is private: no prefix needed
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	w := &restartRun{
		t:           t,
		b:           b,
		r:           throttle.Request{Key: "{corp}/restart", Concurrency: slots, TTL: 30 * time.Second},
		fallback:    opt.Fallback == throttleredis.FallBackLocal,
		stopCh:      make(chan struct{}),
		workersDone: make(chan struct{}),
	}
	w.r.OnStall = func(s throttle.Stall) {
		if s.Reason == throttle.ReasonUnavailable {
			w.waiting.Add(1)
		}
	}
	return w
}

func (w *restartRun) halt() { w.stopOnce.Do(func() { close(w.stopCh) }) }

// start starts the workers, each for at most maxIter calls, and closes
// workersDone when they have all returned.
func (w *restartRun) start(workers, maxIter int) {
	for range workers {
		w.wg.Go(func() {
			for range maxIter {
				select {
				case <-w.stopCh:
					return
				default:
				}
				if !w.call() {
					return
				}
			}
		})
	}
	go func() {
		w.wg.Wait()
		close(w.workersDone)
	}()
}

// call makes one call: Acquire, hold a moment, Release. It reports whether
// the worker goes on.
func (w *restartRun) call() bool {
	start := w.phase.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	l, err := w.b.Acquire(ctx, w.r)
	cancel()
	end := w.phase.Load()
	if err != nil {
		return w.acquireFailed(err, start, end)
	}
	var g *holderGauge
	isLocal := strings.HasPrefix(l.ID, "local:")
	switch {
	case isLocal:
		g = &w.localHolders
		w.local.Add(1)
	case end == 0:
		g = &w.oldHolders
		w.before.Add(1)
	case start == 2:
		g = &w.newHolders
		w.afterRedis.Add(1)
	case end == 2 && !l.Granted.Before(w.restartAt): // waited on Redis across the outage: the new server's
		g = &w.newHolders
		w.waited.Add(1)
	}
	if g != nil {
		g.inc()
	}
	time.Sleep(5 * time.Millisecond)
	if g != nil {
		g.dec()
	}
	w.release(l, isLocal, start)
	return true
}

// acquireFailed reports a failed Acquire made from phase start to phase
// end: failing closed, it waits for Redis; falling back, it is served
// locally. The worker stops.
func (w *restartRun) acquireFailed(err error, start, end int32) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		w.t.Errorf("Acquire hung until its 20s deadline (phase %d→%d): %v", start, end, err)
	} else {
		w.t.Errorf("Acquire (fallback %v, phase %d→%d): %v, want a lease", w.fallback, start, end, err)
	}
	return false
}

// release releases l, granted (locally or not) by an Acquire that started
// in phase start.
//
// A release that finds Redis down (in the outage, or for up to a second
// after the restart: after PoolSize failed dials go-redis's pool answers
// every new connection with the last dial error until a dial in the
// background succeeds) is kept and made when the probe sees Redis answer,
// and fails nothing.
func (w *restartRun) release(l throttle.Lease, isLocal bool, start int32) {
	err := w.b.Release(context.Background(), l)
	switch {
	case err == nil:
	case isLocal || start == 2:
		w.t.Errorf("Release of a lease granted (local %v) after the restart: %v", isLocal, err)
	case errors.Is(err, throttle.ErrLeaseNotHeld):
		w.lost.Add(1) // lost with the old server's data
	default:
		w.t.Errorf("Release: %v", err)
	}
}

// until waits, bounded by limit, until cond holds, and fails the test if
// the workers stop before.
func (w *restartRun) until(what string, limit time.Duration, cond func() bool) {
	t := w.t
	t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-w.workersDone:
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

// check checks the peaks of holders against the slots, and that no local
// lease was granted in FailClosed mode.
func (w *restartRun) check(slots, localSlots int64) {
	t := w.t
	t.Helper()
	t.Logf("before: %d, after on Redis: %d, local fallback: %d, waited on Redis: %d (stalls told %d), leases lost: %d; peak holders old %d, new %d, local %d",
		w.before.Load(), w.afterRedis.Load(), w.local.Load(), w.waited.Load(), w.waiting.Load(), w.lost.Load(),
		w.oldHolders.peak.Load(), w.newHolders.peak.Load(), w.localHolders.peak.Load())
	if p := w.oldHolders.peak.Load(); p > slots {
		t.Errorf("%d holders before the restart, over the %d slots", p, slots)
	}
	if p := w.newHolders.peak.Load(); p > slots {
		t.Errorf("%d holders granted after the restart at once, over the %d slots", p, slots)
	}
	if p := w.localHolders.peak.Load(); p > localSlots {
		t.Errorf("%d holders through the local fallback at once, over its share %d", p, localSlots)
	}
	if !w.fallback && w.local.Load() != 0 {
		t.Errorf("%d leases from a local fallback in FailClosed mode", w.local.Load())
	}
}
