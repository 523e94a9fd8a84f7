package redis_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/throttle"
	throttleredis "github.com/wecomkit/wecom/throttle/redis"
)

// cutProxy forwards loopback TCP connections to a Redis until cut: then it
// closes every connection and refuses new ones (accepts and closes them at
// once), until restored. Redis itself, and its data, are untouched.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: make(map[net.Conn]bool)}
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
	})
	go p.serve()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// setCut cuts the link (closing every connection) or restores it.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		p.conns = make(map[net.Conn]bool)
	}
}

// cmdCounter counts the commands sent to Redis, by name.
type cmdCounter struct {
	redistest.PassHooks
	mu    sync.Mutex
	names map[string]int
}

func (h *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.names[cmd.Name()]++
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

// scripts counts the scripts run since the last reset: every operation of
// the backend is one (connection set-up, HELLO and the like, and the probe's
// PING are not).
func (h *cmdCounter) scripts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.names["evalsha"] + h.names["eval"]
}

// count counts the commands called name since the last reset.
func (h *cmdCounter) count(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.names[name]
}

func (h *cmdCounter) reset() {
	h.mu.Lock()
	h.names = make(map[string]int)
	h.mu.Unlock()
}

// While Redis is known to be down, no call waits on it: every acquisition,
// extension and release fails at once, and only the background probe (a
// PING every RetryRedisAfter) talks to Redis. A release that failed in the
// outage is made when Redis answers again, so its slot does not wait for
// its TTL.
func TestRedisOutageFailsFastAndReleasesLater(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	b, proxy, counter := outageBackend(t)
	ctx := context.Background()
	r := throttle.Request{Key: "{corp}/outage", Concurrency: 1, TTL: time.Hour}
	held, err := b.Acquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}

	proxy.setCut(true)
	// The release is deferred (sent within milliseconds, with others) or
	// fails at once; either way it is kept until Redis answers.
	if err := b.Release(ctx, held); err != nil && !errors.Is(err, throttle.ErrUnavailable) {
		t.Fatalf("Release in the outage: %v, want nil or ErrUnavailable", err)
	}
	if !robustEventually(10*time.Second, func() bool {
		_, err := b.TryAcquire(ctx, r)
		return errors.Is(err, throttle.ErrUnavailable)
	}) {
		t.Fatal("the outage never became known")
	}
	// The outage is known now: a burst of calls over many probe periods
	// (the burst's length is a trigger, not an assertion) runs no script:
	// only the probe's PINGs go out.
	counter.reset()
	calls, wrong := callsInOutage(ctx, b, r, held)
	if n, pings := counter.scripts(), counter.count("ping"); n != 0 || wrong != 0 || pings == 0 {
		t.Errorf("%d calls in the outage ran %d scripts, %d did not fail with ErrUnavailable, %d probe PINGs; want no script, every call failed, a probe", calls, n, wrong, pings)
	}

	proxy.setCut(false)
	// The release kept from the outage is made once a probe sees Redis:
	// the slot (whose lease TTL is an hour) frees up.
	free := robustEventually(10*time.Second, func() bool {
		l, err := b.TryAcquire(ctx, r)
		if err != nil {
			return false
		}
		_ = b.Release(ctx, l)
		return true
	})
	if !free {
		t.Error("the slot released during the outage was still held after Redis came back")
	}
}

// outageBackend returns a Redis backend whose client reaches Redis through
// a proxy that can cut it off, under a fresh prefix, with the proxy and a
// counter of the commands the client sends.
func outageBackend(t *testing.T) (*throttleredis.Backend, *cutProxy, *cmdCounter) {
	t.Helper()
	rdb := redistest.Single(t) // for the key cleanup
	proxy := newCutProxy(t, os.Getenv(redistest.EnvAddr))
	counter := &cmdCounter{names: make(map[string]int)}
	via := redis.NewClient(&redis.Options{Addr: proxy.addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	via.AddHook(counter)
	t.Cleanup(func() { _ = via.Close() })
	prefix := redistest.Prefix(t, rdb)
	// WaitForRedis is short: a call in the outage waits for Redis that long,
	// sending nothing, then fails with ErrUnavailable (the default minute
	// would make the burst below last minutes).
	b, err := throttleredis.New(via, throttleredis.Options{Prefix: prefix, RetryRedisAfter: 20 * time.Millisecond, OpTimeout: time.Second, WaitForRedis: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, proxy, counter
}

// callsInOutage makes a burst of calls from 8 goroutines for 300ms:
// Acquire, TryAcquire and Extend of held. It returns how many calls it made
// and how many did not fail with ErrUnavailable (or, for the Extend of a
// lease this process released, ErrLeaseNotHeld: known without Redis).
func callsInOutage(ctx context.Context, b *throttleredis.Backend, r throttle.Request, held throttle.Lease) (calls, wrong int64) {
	var nCalls, nWrong atomic.Int64
	stop := time.Now().Add(300 * time.Millisecond)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				_, err1 := b.Acquire(ctx, r)
				_, err2 := b.TryAcquire(ctx, r)
				_, err3 := b.Extend(ctx, held, time.Hour)
				if errors.Is(err3, throttle.ErrLeaseNotHeld) {
					err3 = throttle.ErrUnavailable
				}
				for _, err := range []error{err1, err2, err3} {
					if !errors.Is(err, throttle.ErrUnavailable) {
						nWrong.Add(1)
					}
				}
				nCalls.Add(3)
			}
		})
	}
	wg.Wait()
	return nCalls.Load(), nWrong.Load()
}

// dialCounter is a redis.Options.Dialer that counts dials and the most in
// flight at once. Each dial takes at least dialHold, so that dials made at
// the same time overlap and are seen to.
type dialCounter struct {
	n, inflight, most atomic.Int64
}

const dialHold = 20 * time.Millisecond

func (d *dialCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.n.Add(1)
	cur := d.inflight.Add(1)
	defer d.inflight.Add(-1)
	for m := d.most.Load(); cur > m && !d.most.CompareAndSwap(m, cur); m = d.most.Load() {
	}
	t := time.NewTimer(dialHold)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// countedClient returns a client of addr with go-redis's defaults (retries
// and all, as a new user has them) whose dials and commands are counted.
func countedClient(t *testing.T, addr string) (*redis.Client, *dialCounter, *cmdCounter) {
	t.Helper()
	dials, cmds := &dialCounter{}, &cmdCounter{names: make(map[string]int)}
	rdb := redis.NewClient(&redis.Options{Addr: addr, Dialer: dials.dial})
	rdb.AddHook(cmds)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, dials, cmds
}

// refusedAddr returns a loopback address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// burst makes n calls from each of workers goroutines at once, alternating
// Acquire and TryAcquire on r, and returns how many did not fail with
// ErrUnavailable.
func burst(b *throttleredis.Backend, r throttle.Request, workers, n int) (wrong int64, last error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard only
	defer cancel()
	var bad atomic.Int64
	var mu sync.Mutex
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			<-start
			for j := range n {
				var err error
				if (i+j)%2 == 0 {
					_, err = b.Acquire(ctx, r)
				} else {
					_, err = b.TryAcquire(ctx, r)
				}
				if !errors.Is(err, throttle.ErrUnavailable) {
					bad.Add(1)
					mu.Lock()
					last = err
					mu.Unlock()
				}
			}
		})
	}
	close(start)
	wg.Wait()
	return bad.Load(), last
}

// A new backend whose Redis is unreachable: its first calls, made all at
// once, do not each dial Redis: one probe dials, they wait for its verdict
// and fail with ErrUnavailable (an Acquire once it has waited
// WaitForRedis, cut to a millisecond here), and no call runs a command of
// its own. The calls after that fail, and still only the probe dials.
func TestRedisUnreachableFirstCallsOneProbe(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	rdb, dials, cmds := countedClient(t, refusedAddr(t))
	b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: "wt:unreachable:", RetryRedisAfter: 50 * time.Millisecond, WaitForRedis: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	r := throttle.Request{Key: "{corp}/first", Concurrency: 1, Windows: []throttle.Window{{Limit: 10, Period: time.Minute}}}

	if wrong, last := burst(b, r, 32, 1); wrong != 0 {
		t.Errorf("first calls: %d of 32 did not fail with ErrUnavailable (last: %v)", wrong, last)
	}
	if n, most := cmds.scripts(), dials.most.Load(); n != 0 || most != 1 {
		t.Errorf("32 first calls at once: %d scripts sent, at most %d dials at once; want none, and one (the probe's)", n, most)
	}
	if cmds.count("ping") == 0 {
		t.Error("no probe PING was sent")
	}
	if wrong, last := burst(b, r, 8, 200); wrong != 0 {
		t.Errorf("calls known down: %d of 1600 did not fail with ErrUnavailable (last: %v)", wrong, last)
	}
	if n, d, pings := cmds.scripts(), dials.n.Load(), int64(cmds.count("ping")); n != 0 || d > dialsPerPing*(pings+1) {
		t.Errorf("after 1600 more calls: %d scripts sent, %d dials for %d probe PINGs; want none, and only the probe's dials", n, d, pings)
	}
	t.Logf("%d dials, %d PINGs in all", dials.n.Load(), cmds.count("ping"))
}

// dialsPerPing is the most dials one command makes with go-redis's defaults:
// 5 attempts a connection, for the command and each of its 3 retries. (A
// dial go-redis started goes on after the command's context ends, so the
// dials of successive probes may overlap.)
const dialsPerPing = 5 * 4

// A Redis killed under a working backend: once one call has seen it gone,
// every call fails with ErrUnavailable (a TryAcquire at once, an Acquire
// once it has waited WaitForRedis, cut to a millisecond here), none runs a
// command, only the probe dials (the subscription does not redial on its
// own), and when Redis is back (restarted, empty) calls are answered again.
func TestRedisKilledFailsFastAndRecovers(t *testing.T) {
	t.Parallel() // waits on servers of its own, or keys of its own
	addr, restart, stop := redistest.StartServer(t)
	rdb, dials, cmds := countedClient(t, addr)
	b, err := throttleredis.New(rdb, throttleredis.Options{Prefix: "wt:killed:", RetryRedisAfter: 50 * time.Millisecond, WaitForRedis: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	r := throttle.Request{Key: "{corp}/killed", Concurrency: 2, Windows: []throttle.Window{{Limit: 1000, Period: time.Minute}}}
	l, err := b.Acquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, l); err != nil {
		t.Fatal(err)
	}

	stop()
	// One call learns that Redis is gone (it, or the subscription's probe).
	if !robustEventually(30*time.Second, func() bool {
		_, err := b.TryAcquire(ctx, r)
		return errors.Is(err, throttle.ErrUnavailable)
	}) {
		t.Fatal("calls still succeed with Redis killed")
	}
	cmds.reset()
	dials.n.Store(0)
	if wrong, last := burst(b, r, 8, 200); wrong != 0 {
		t.Errorf("%d of 1600 calls did not fail with ErrUnavailable (last: %v)", wrong, last)
	}
	// The dials of the command that saw Redis gone may go on: one more
	// command's worth.
	if n, d, pings := cmds.scripts(), dials.n.Load(), int64(cmds.count("ping")); n != 0 || d > dialsPerPing*(pings+1) {
		t.Errorf("1600 calls with Redis known down: %d scripts sent, %d dials for %d probe PINGs; want none, and only the probe's dials", n, d, pings)
	}

	restart()
	// Redis answers again: a call is served, or refused by a limit (the
	// window's history was lost, and is held as full for a while: see
	// TestRedisRestartEmptyKeepsWindows), but does not fail.
	if !robustEventually(30*time.Second, func() bool {
		l, err := b.TryAcquire(ctx, r)
		if err != nil {
			return errors.Is(err, throttle.ErrLimited)
		}
		return b.Release(ctx, l) == nil
	}) {
		t.Fatal("calls still fail after Redis was restarted")
	}
}
