// With slots on the Redis backend: when they are taken in their request's
// own round trip (together) and when apart, and the release of With leases
// (splitWith, dropWith, the release script).

package throttle

import (
	"context"
	"strings"
)

// splitWith sorts l's With leases into those the release script of l can
// release with it (Redis leases sharing its hash tag, on keys no local
// waiter wants: a waiter of this process there is handed its slot by a
// Release of its own) and the rest.
func (b *Redis) splitWith(l Lease) (together, apart []Lease) {
	if len(l.With) == 0 {
		return nil, nil
	}
	if strings.HasPrefix(l.ID, localLease) {
		return nil, l.With
	}
	tag := hashTag(l.Key)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range l.With {
		k := b.keys[s.Key]
		if strings.HasPrefix(s.ID, localLease) || hashTag(s.Key) != tag || k.waiting() {
			apart = append(apart, s)
		} else {
			together = append(together, s)
		}
	}
	return together, apart
}

// dropWith releases l's With leases and returns l without them.
func (b *Redis) dropWith(l Lease) Lease {
	if len(l.With) > 0 {
		_ = b.Release(context.Background(), Lease{Key: l.Key, With: l.With}) // on failure the TTL frees them
		l.With = nil
	}
	return l
}

// releaseScript runs the release script for l (whose own slot it releases
// if it holds one) and its With leases, which share its hash tag, refunding
// units in windows (nil: no refund). held: every lease still held its slot.
func (b *Redis) releaseScript(ctx context.Context, l Lease, windows []Window, units int) (held bool, err error) {
	k := b.names(l.Key, windows)
	keys := append(make([]string, 0, 2+len(windows)+2*len(l.With)), k.holders, k.waiting)
	id, granted := "", int64(0)
	if l.ownSlot() || len(windows) > 0 {
		id = redisID(l.ID)
	}
	if len(windows) > 0 {
		keys, granted = append(keys, k.windows...), l.Granted.UnixMilli()
	}
	args := []any{id, b.wakePrefix, l.Key, granted, units, len(l.With)}
	for _, w := range windows {
		args = append(args, w.Period.Milliseconds())
	}
	for _, s := range l.With {
		sk := b.names(s.Key, nil)
		keys = append(keys, sk.holders, sk.waiting)
		args = append(args, redisID(s.ID), s.Key)
	}
	defer b.quiet.begin()()
	n, err := b.release.Run(ctx, b.rdb, keys, args...).Int64()
	return n == 1, err
}

// nudge wakes the head of key's line for a slot a hand-over left free.
func (b *Redis) nudge(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k := b.keys[key]; k != nil {
		k.targeted = true
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
}
