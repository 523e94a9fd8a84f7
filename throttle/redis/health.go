package redis

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// What a Redis backend knows of Redis (Backend.health).
const (
	healthUnknown int32 = iota // the first probe, or one after the subscription broke, has not answered yet
	healthUp                   // the last round trip, or probe, was answered
	healthDown                 // a round trip failed for want of Redis, and no probe was answered since
)

// isDown reports whether Redis is known to be unreachable: calls then do not
// wait on it, only the probe does.
func (b *Backend) isDown() bool { return b.health.Load() == healthDown }

// ready reports whether Redis is known to be down. While it is unknown, it
// waits for the probe's verdict, bounded by ctx, instead of dialing Redis
// (see REDIS.md, "Redis down").
func (b *Backend) ready(ctx context.Context) (down bool, err error) {
	h := b.health.Load()
	if h == healthUnknown {
		err = b.waitUntil(ctx, func() bool { h = b.health.Load(); return h != healthUnknown })
	}
	return h == healthDown, err
}

// waitUntil waits until ok, called under b.mu, holds, and returns the error of
// ctx, or errClosed after Close.
func (b *Backend) waitUntil(ctx context.Context, ok func() bool) error {
	for {
		b.mu.Lock()
		done, ch := ok(), b.changed
		b.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-b.done:
			return errClosed()
		}
	}
}

// signal wakes whoever waits for a change of health or probing, or for a
// deferred release's send to end. The caller holds b.mu.
func (b *Backend) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// setHealth records what is known of Redis. The caller holds b.mu.
func (b *Backend) setHealth(h int32) {
	if b.health.Load() != h {
		if h == healthDown {
			b.downAt = time.Now()
		}
		b.health.Store(h)
		b.signal()
	}
}

// markDown deems Redis unreachable and starts the probe unless it runs.
func (b *Backend) markDown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setHealth(healthDown)
	b.startProbe(b.opt.RetryRedisAfter)
}

// suspect starts a probe at once, unless one runs: the subscription broke,
// and one PING tells whether Redis did. Until it answers, Redis is unknown
// again (see ready).
func (b *Backend) suspect() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.health.Load() == healthUp {
		b.setHealth(healthUnknown)
	}
	b.startProbe(0)
}

// startProbe starts a new era, and the probe after delay unless it runs.
// The caller holds b.mu.
func (b *Backend) startProbe(delay time.Duration) {
	b.era.Add(1)
	if !b.probing {
		b.probing = true
		b.signal()
		go b.probe(delay)
	}
}

// probe decides when Redis answers: after delay, and then every
// RetryRedisAfter, it sends one PING. When a PING is answered, the process
// first subscribes (unless it is), so that no notice sent after its calls
// resume is missed, and writes back what Redis may have lost (restoreAll);
// then calls go back to Redis, and the orphans are released. It ends with
// Close.
func (b *Backend) probe(delay time.Duration) {
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-b.done: // probing stays set: no probe starts after Close
			return
		case <-t.C:
		}
		ctx, cancel := b.opCtx(context.Background())
		err := b.rdb.Ping(ctx)
		cancel()
		if err == nil && b.subscribe() == nil && b.restoreAll() == nil {
			break
		}
		b.mu.Lock()
		b.setHealth(healthDown)
		b.mu.Unlock()
		t.Reset(b.opt.RetryRedisAfter)
	}
	b.mu.Lock()
	b.setHealth(healthUp)
	b.probing = false
	b.signal()
	orphans := b.orphans
	b.orphans = nil
	b.mu.Unlock()
	for _, l := range orphans {
		_ = b.Release(context.Background(), l)
	}
}

// orphan keeps a lease whose release failed for want of Redis, for the probe
// to release when Redis answers (a lease that expired meanwhile is gone).
func (b *Backend) orphan(l throttle.Lease) {
	l.ID = redisID(l.ID) // released later by its Redis id, as no longer held here
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.orphans) < maxOrphans {
		b.orphans = append(b.orphans, l)
	}
}

// listenIdle is how long the subscription may stay silent before it is
// pinged, and, twice over, deemed broken.
const listenIdle = time.Second

// listen reads the subscription (cooldown notices and wake-ups for
// this process) and dispatches what arrives, while Redis is known up and no
// probe runs. When the subscription breaks, or stays silent after a PING, it
// is dropped and a probe decides whether Redis is down; the probe makes a new
// one when Redis answers, so that nothing dials a Redis known down. Notices
// lost meanwhile are covered by the waiters' resync.
func (b *Backend) listen() {
	silent := 0 // PINGs unanswered on ps
	var ps subscription
	settled := func() bool { ps = b.pubsub; return b.health.Load() == healthUp && !b.probing && ps != nil }
	for b.waitUntil(context.Background(), settled) == nil {
		ctx, cancel := context.WithTimeout(context.Background(), listenIdle+b.opt.OpTimeout)
		channel, payload, err := ps.Receive(ctx, listenIdle)
		cancel()
		var ne net.Error
		switch {
		case err == nil:
			silent = 0
			if channel != "" {
				b.dispatch(channel, payload)
			}
		case errors.As(err, &ne) && ne.Timeout() && silent < 2:
			silent++
			octx, cancel := b.opCtx(context.Background())
			_ = ps.Ping(octx) // its Pong, or the error, comes to ReceiveTimeout
			cancel()
		default: // only here is b.pubsub dropped, and only then is another made
			b.mu.Lock()
			b.pubsub, silent = nil, 0
			b.mu.Unlock()
			_ = ps.Close()
			b.suspect()
		}
	}
}

// subscribe makes the subscription and keeps it in b.pubsub, unless there
// is one or the backend was closed meanwhile.
func (b *Backend) subscribe() error {
	b.mu.Lock()
	ok := b.pubsub != nil
	b.mu.Unlock()
	if ok {
		return nil
	}
	ctx, cancel := b.opCtx(context.Background())
	ps, err := b.rdb.Subscribe(ctx, b.channel, b.wakePrefix+b.proc)
	cancel()
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed() {
		_ = ps.Close()
		return errClosed()
	}
	b.pubsub = ps
	return nil
}
