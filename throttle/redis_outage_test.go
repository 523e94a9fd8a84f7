package throttle_test

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
	mu    sync.Mutex
	names map[string]int
}

func (h *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.names[cmd.Name()]++
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (h *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
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
	rdb := redistest.Single(t) // for the key cleanup
	proxy := newCutProxy(t, os.Getenv(redistest.EnvAddr))
	counter := &cmdCounter{names: make(map[string]int)}
	via := redis.NewClient(&redis.Options{Addr: proxy.addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	via.AddHook(counter)
	t.Cleanup(func() { _ = via.Close() })
	prefix := redistest.Prefix(t, rdb)
	b, err := throttle.NewRedis(via, throttle.RedisOptions{Prefix: prefix, RetryRedisAfter: 20 * time.Millisecond, OpTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	r := throttle.Request{Key: "{corp}/outage", Concurrency: 1, TTL: time.Hour}
	held, err := b.Acquire(ctx, r)
	if err != nil {
		t.Fatal(err)
	}

	proxy.setCut(true)
	if err := b.Release(ctx, held); !errors.Is(err, throttle.ErrUnavailable) {
		t.Fatalf("Release in the outage: %v, want ErrUnavailable", err)
	}
	// The outage is known now: a burst of calls over many probe periods
	// (the burst's length is a trigger, not an assertion) runs no script:
	// only the probe's PINGs go out.
	counter.reset()
	var calls, wrong atomic.Int64
	stop := time.Now().Add(300 * time.Millisecond)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				_, err1 := b.Acquire(ctx, r)
				_, err2 := b.TryAcquire(ctx, r)
				_, err3 := b.Extend(ctx, held, time.Hour)
				for _, err := range []error{err1, err2, err3} {
					if !errors.Is(err, throttle.ErrUnavailable) {
						wrong.Add(1)
					}
				}
				calls.Add(3)
			}
		})
	}
	wg.Wait()
	if n, pings := counter.scripts(), counter.count("ping"); n != 0 || wrong.Load() != 0 || pings == 0 {
		t.Errorf("%d calls in the outage ran %d scripts, %d did not fail with ErrUnavailable, %d probe PINGs; want no script, every call failed, a probe", calls.Load(), n, wrong.Load(), pings)
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
