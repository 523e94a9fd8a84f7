// Records on the Redis backend: what a process queued for a key's slot
// records in Redis of the With slots its next waiter waits with, so that
// another process's hand-over can grant it the slot with them (see
// lua/grant.lua); and which waiter a grant goes to.

package throttle

import (
	"strconv"
	"strings"
)

// record returns the record (see lua/grant.lua) of r's With slots: per
// slot, its holders and cooldown keys, its concurrency as capped, its lease
// TTL (ms) and its key, each field as "<bytes>:<field>". Empty when r has
// none, or one that a grant on r's key cannot take (another hash tag, a
// TTL under a millisecond), or on a Cluster (see Redis.grants): a
// grant then comes without them.
func (b *Redis) record(r Request) string {
	if !b.grants || len(r.With) == 0 {
		return ""
	}
	tag := hashTag(r.Key)
	var sb strings.Builder
	for _, s := range r.With {
		ttl := s.LeaseTTL().Milliseconds()
		if hashTag(s.Key) != tag || ttl < 1 {
			return ""
		}
		k := b.names(s.Key, nil)
		for _, f := range []string{k.holders, k.cooldown, strconv.Itoa(b.capped(s).Concurrency), strconv.FormatInt(ttl, 10), s.Key} {
			sb.WriteString(strconv.Itoa(len(f)))
			sb.WriteByte(':')
			sb.WriteString(f)
		}
	}
	return sb.String()
}

// nextRecord returns the record of the waiter of key that waits next for a
// slot: the first in arrival order that is available (not claimed for a
// hand-over or a batch, nor asking Redis itself). Empty if there is none,
// or it has no With slots. A grant that queues this process again records
// it, for the next grant another process makes it.
func (b *Redis) nextRecord(key string) string {
	b.mu.Lock()
	next := b.keys[key].available()
	b.mu.Unlock()
	if next == nil {
		return ""
	}
	return b.record(next.req)
}

// grantWaiter returns the waiter of key that a grant g from another
// process goes to, among the free waiters with g's limits: one not asking
// Redis itself before one that is, and among those, one whose With slots
// are the ones g took (same keys in the same order, same limits) first;
// fits reports that it is such a one, which keeps them. Nil if none; others
// is how many waiters queue on the key. The caller holds b.mu.
func (b *Redis) grantWaiter(g grant) (k *rkey, to *rwaiter, fits bool, others int) {
	k = b.keys[g.req.Key]
	if k == nil {
		return nil, nil, false, 0
	}
	var prefer func(*rwaiter) bool
	if len(g.req.With) > 0 {
		prefer = func(w *rwaiter) bool { return b.sameWith(w.req.With, g.req.With) }
	}
	to, fits = k.waiterFor(g.req, true, prefer, b.capped)
	return k, to, fits, k.waiters.len()
}

// sameWith reports whether leases of the With slots granted (keys,
// concurrency and TTL in whole milliseconds, as parsed from a grant) serve
// a request with the With slots want: the same keys in the same order,
// under the same limits as capped.
func (b *Redis) sameWith(want, granted []Request) bool {
	if len(want) != len(granted) {
		return false
	}
	for i, s := range want {
		g := granted[i]
		if s.Key != g.Key || b.capped(s).Concurrency != g.Concurrency ||
			s.LeaseTTL().Milliseconds() != g.LeaseTTL().Milliseconds() {
			return false
		}
	}
	return true
}
