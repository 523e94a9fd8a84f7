package throttle

import (
	"context"
	"errors"
	"net"
	"time"
)

// What a Redis backend knows of Redis (Redis.health).
const (
	healthUnknown int32 = iota // the first probe, or one after the subscription broke, has not answered yet
	healthUp                   // the last round trip, or probe, was answered
	healthDown                 // a round trip failed for want of Redis, and no probe was answered since
)

// isDown reports whether Redis is known to be unreachable: calls then do not
// wait on it, only the probe does.
func (b *Redis) isDown() bool { return b.health.Load() == healthDown }

// ready reports whether Redis is known to be down. While it is unknown (the
// first probe, or the probe after the subscription broke, has not answered),
// it waits for that probe's verdict, bounded by ctx, so that the first calls
// of a new backend, or those after Redis went away, do not each dial Redis:
// the probe alone does.
func (b *Redis) ready(ctx context.Context) (down bool, err error) {
	for {
		switch b.health.Load() {
		case healthUp:
			return false, nil
		case healthDown:
			return true, nil
		}
		b.mu.Lock()
		ch, unknown := b.changed, b.health.Load() == healthUnknown
		b.mu.Unlock()
		if !unknown {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false, ctx.Err()
		case <-b.done:
			return false, errClosed()
		}
	}
}

// signal wakes whoever waits for a change of health or probing. The caller
// holds b.mu.
func (b *Redis) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// setHealth records what is known of Redis. The caller holds b.mu.
func (b *Redis) setHealth(h int32) {
	if b.health.Load() != h {
		b.health.Store(h)
		b.signal()
	}
}

// markDown deems Redis unreachable and starts the probe unless it runs.
func (b *Redis) markDown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.setHealth(healthDown)
	b.newEra()
	if !b.probing {
		b.probing = true
		b.signal()
		go b.probe(b.opt.RetryRedisAfter)
	}
}

// suspect starts a probe at once, unless one runs: the subscription broke,
// and one PING tells whether Redis did. Until it answers, Redis is unknown
// again: calls wait for the probe's verdict instead of each dialing a Redis
// that may be gone.
func (b *Redis) suspect() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.health.Load() == healthUp {
		b.setHealth(healthUnknown)
	}
	b.newEra()
	if !b.probing {
		b.probing = true
		b.signal()
		go b.probe(0)
	}
}

// probe decides when Redis answers: after delay, and then every
// RetryRedisAfter, it sends one PING, the only round trip that waits on Redis
// while it is known down. When a PING is answered, the process first
// subscribes (unless it is), so that no notice sent after its calls resume
// is missed, and writes back what Redis may have lost (see restoreAll); then
// calls go back to Redis, and the releases that failed meanwhile are made (a lease that
// expired meanwhile is simply gone). It ends with Close.
func (b *Redis) probe(delay time.Duration) {
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			b.mu.Lock()
			b.probing = false
			b.signal()
			b.mu.Unlock()
			return
		case <-t.C:
		}
		ctx, cancel := b.opCtx(context.Background())
		err := b.rdb.Ping(ctx)
		cancel()
		if err == nil {
			err = b.subscribe()
		}
		if err == nil {
			err = b.restoreAll()
		}
		if err == nil {
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
// to release when Redis answers.
func (b *Redis) orphan(l Lease) {
	l.ID = redisID(l.ID) // released later by its Redis id, as no longer held here
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.orphans) < maxOrphans {
		b.orphans = append(b.orphans, l)
	}
}

// settled waits until Redis is up and no probe runs, and reports false when
// the backend is closed first.
func (b *Redis) settled() bool {
	for {
		b.mu.Lock()
		ok, ch := b.health.Load() == healthUp && !b.probing, b.changed
		b.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-b.done:
			return false
		}
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
func (b *Redis) listen() {
	silent := 0
	var last RedisSubscription
	for b.settled() {
		b.mu.Lock()
		ps := b.pubsub
		b.mu.Unlock()
		if ps == nil { // dropped while the probe ran: never, as settled
			b.suspect()
			continue
		}
		if ps != last {
			last, silent = ps, 0
		}
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
		default:
			b.mu.Lock()
			if b.pubsub == ps {
				b.pubsub = nil
			}
			b.mu.Unlock()
			_ = ps.Close()
			b.suspect()
		}
	}
}

// subscribe makes the subscription and keeps it in b.pubsub, unless there
// is one or the backend was closed meanwhile.
func (b *Redis) subscribe() error {
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
	select {
	case <-b.done:
		_ = ps.Close()
		return errClosed()
	default:
	}
	b.pubsub = ps
	return nil
}
