// Releases off the caller's path: a slot no waiter of this process wants
// and no other process is known to wait for is released a moment later,
// with the others released meanwhile, in one script per hash tag (see
// REDIS.md, "Releases later, together").

package redis

import (
	"context"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

const (
	// linger is how long a release may wait for others to go with it.
	linger = 20 * time.Millisecond
	// maxLater bounds the releases one script carries; more go at once.
	maxLater = 64
	// laterLeft is the TTL a lease must have left to be released later,
	// so that the release finds it held and Release's nil is the truth.
	laterLeft = 2 * time.Second
)

// later defers the release of l, which this process has stopped holding
// (unhold) and no waiter of it wants, when it may: it reports whether it
// did. Its letGo comes when the release has been sent.
func (b *Backend) later(l throttle.Lease) bool {
	if b.cold || time.Until(l.Expires) < laterLeft { // l holds a slot: Release saw to it
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if h := b.hot[l.Key]; h == nil || h.contended || b.health.Load() != healthUp || b.closed() {
		return false
	}
	b.pending[redisID(l.ID)] = l
	switch {
	case len(b.pending) >= maxLater:
		go b.sendLater()
	case len(b.pending) == 1:
		time.AfterFunc(linger, b.sendLater)
	}
	return true
}

// releasedLater reports whether the lease of id (by its Redis id: the
// lease Redis granted, whoever it was handed on to) waits to be sent or is
// being sent. The caller holds Backend.mu.
func (b *Backend) releasedLater(id string) bool {
	_, pending := b.pending[redisID(id)]
	_, sending := b.sending[redisID(id)]
	return pending || sending
}

// laterOn reports whether a release of key waits to be sent or is being
// sent. The caller holds Backend.mu.
func (b *Backend) laterOn(key string) bool {
	for _, m := range []map[string]throttle.Lease{b.pending, b.sending} {
		for _, l := range m {
			if l.Key == key {
				return true
			}
		}
	}
	return false
}

// sendFor sends the deferred releases of key's hash tag, or waits for
// those being sent, before this process asks Redis for a slot of key, so
// that it never waits for its own release. It waits no longer than ctx, nor
// past Close.
func (b *Backend) sendFor(ctx context.Context, key string) error {
	return b.waitUntil(ctx, func() bool {
		if !b.laterOn(key) {
			return true
		}
		tag := hashTag(key)
		if batch := b.take(tag)[tag]; len(batch) > 0 {
			go b.send(batch) // its end wakes waitUntil (signal)
		}
		return false
	})
}

// take moves the pending releases of hash tag tag (all of them: "") to
// sending and returns them by hash tag. The caller holds Backend.mu.
func (b *Backend) take(tag string) map[string][]throttle.Lease {
	byTag := make(map[string][]throttle.Lease)
	for id, l := range b.pending {
		if t := hashTag(l.Key); tag == "" || t == tag {
			byTag[t] = append(byTag[t], l)
			delete(b.pending, id)
			b.sending[id] = l
		}
	}
	return byTag
}

// sendLater sends every deferred release, one script per hash tag; once
// Redis fails, the rest are kept to be sent when it answers again.
func (b *Backend) sendLater() {
	b.mu.Lock()
	byTag := b.take("")
	b.mu.Unlock()
	for _, ls := range byTag {
		b.send(ls)
	}
}

// send releases ls, leases of one hash tag, in one script. A release
// Redis did not take, or that was not tried because Redis is down, is
// kept as an orphan: released when Redis answers again, else freed by its
// TTL.
func (b *Backend) send(ls []throttle.Lease) {
	failed := b.isDown()
	if !failed {
		ctx, cancel := b.opCtx(context.Background())
		_, err := b.releaseScript(ctx, throttle.Lease{Key: ls[0].Key, With: ls}, nil, 0)
		cancel()
		if err != nil {
			_, _ = b.failed("release", err)
			failed = true
		}
	}
	if failed {
		for _, l := range ls {
			b.orphan(l)
		}
	}
	b.mu.Lock()
	for _, l := range ls {
		delete(b.sending, redisID(l.ID))
		b.dropHolding(l.Key, 1)
	}
	b.signal() // wakes those waiting for a send to end
	b.mu.Unlock()
}

// sendingDone waits until no deferred release is being sent, or for the
// round trip's timeout.
func (b *Backend) sendingDone() {
	give := time.After(b.opt.OpTimeout)
	for {
		b.mu.Lock()
		n, sent := len(b.sending), b.changed
		b.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-sent:
		case <-give:
			return
		}
	}
}

// closed reports whether Close was called.
func (b *Backend) closed() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}
