// Batched grants on the Redis backend: the head of a key's line asks Redis
// for the waiters behind it too, and so does a release that hands its slot
// over, so that one round trip serves as many of them as the limits allow.

package throttle

// maxBatch bounds the leases one ask takes for the waiters of a process.
const maxBatch = 64

// claimBatch claims, for the ask of w (the head of key's line, or the
// waiter a hand-over serves), the other waiters that a lease granted under
// r's limits serves (available, with the same limits), unless the key's last
// answer was a refusal for want of a slot: a key whose slots are all taken
// frees one at a time. more (other waiters queue) becomes whether some
// waiter is left beyond the batch.
func (b *Redis) claimBatch(key string, w *rwaiter, r Request, more bool) (batch []*rwaiter, _ bool) {
	if !more {
		return nil, more
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.keys[key]
	if k == nil || k.refused != nil && k.refused.v.reason == ReasonConcurrency {
		return nil, more
	}
	capped := b.capped(r)
	for x := range k.waiters.all() {
		if len(batch) == maxBatch-1 {
			break
		}
		if x != w && x.available() && sameLimits(b.capped(x.req), capped) {
			x.claimed = true
			batch = append(batch, x)
		}
	}
	return batch, k.waiters.len()-1 > len(batch)
}

// deliver hands the batch's leases to the waiters claimed for them, in
// order; a waiter the limits left without one gets none and waits on.
func (b *Redis) deliver(key string, batch []*rwaiter, leases []Lease) {
	for i, x := range batch {
		var l Lease
		if i < len(leases) {
			l = leases[i]
		}
		b.settle(key, x, l, false, false)
	}
}
