// Releases off the caller's path: a slot no waiter of this process wants
// and no other process is known to wait for is released a moment later,
// with the others released meanwhile, in one script per hash tag.

package throttle

import (
	"context"
	"time"
)

const (
	// linger is how long a release may wait for others to go with it: it
	// delays only a process that waits for the slot unknown to this one
	// (one known to wait is released to at once).
	linger = 20 * time.Millisecond
	// maxLater bounds the releases one script carries; more go at once.
	maxLater = 64
	// laterLeft is the TTL a lease must have left to be released later,
	// so that the release finds it held and Release's nil is the truth.
	laterLeft = 2 * time.Second
)

// later defers the release of l, which this process has stopped holding
// (unhold) and no waiter of it wants, when it may: it reports whether it
// did. Its letGo comes when the release is sent.
func (b *Redis) later(l Lease) bool {
	if b.cold || !l.ownSlot() || time.Until(l.Expires) < laterLeft {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if h := b.hot[l.Key]; h == nil || h.contended || b.health.Load() != healthUp || b.closed() {
		return false
	}
	if b.pending == nil {
		b.pending = make(map[string]Lease)
	}
	b.pending[l.ID] = l
	switch {
	case len(b.pending) >= maxLater:
		go b.sendLater()
	case len(b.pending) == 1:
		time.AfterFunc(linger, b.sendLater)
	}
	return true
}

// pendingOn reports whether a release of key waits to be sent, and
// whether id is one. The caller holds Redis.mu.
func (b *Redis) pendingOn(key, id string) (onKey, isID bool) {
	if _, ok := b.pending[id]; ok {
		return true, true
	}
	for _, l := range b.pending {
		if l.Key == key {
			return true, false
		}
	}
	return false, false
}

// sendFor sends the deferred releases before this process asks Redis for
// a slot of key, so that it never waits for its own release.
func (b *Redis) sendFor(key string) {
	b.mu.Lock()
	on, _ := b.pendingOn(key, "")
	b.mu.Unlock()
	if on {
		b.sendLater()
	}
}

// sendLater sends every deferred release, one script per hash tag. A
// release Redis did not take is kept to be sent when it answers again.
func (b *Redis) sendLater() {
	b.mu.Lock()
	byTag := make(map[string][]Lease)
	for _, l := range b.pending {
		byTag[hashTag(l.Key)] = append(byTag[hashTag(l.Key)], l)
	}
	b.pending = nil
	b.mu.Unlock()
	for _, ls := range byTag {
		ctx, cancel := b.opCtx(context.Background())
		_, err := b.releaseScript(ctx, Lease{Key: ls[0].Key, With: ls}, nil, 0)
		cancel()
		if err != nil {
			if outage, _ := b.failed("release", err); outage {
				for _, l := range ls {
					b.orphan(l)
				}
			}
		}
		for _, l := range ls {
			b.letGo(l.Key)
		}
	}
}

// closed reports whether Close was called.
func (b *Redis) closed() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}
