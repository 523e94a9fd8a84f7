// Hand-overs of the Redis backend: the messages a process receives
// (dispatch), wake-ups passed on (passOn), and leases handed on to another
// waiter or given back (settle, handOn, giveBack).

package throttle

import (
	"context"
	"strings"
	"time"
)

// dispatch handles a message of the subscription: on the broadcast
// channel, a notice that another process queued for a key's slot, or a
// key's cooldown, which wakes its head; on this process's own, its turn
// for a slot of the key, which wakes the head, or, if nobody here waits on
// the key any more, goes to the next process.
func (b *Redis) dispatch(channel, payload string) {
	own := channel != b.channel
	if rest, ok := strings.CutPrefix(payload, "\n"); ok && !own {
		if proc, key, _ := strings.Cut(rest, "\n"); proc != b.proc {
			b.noteContended(key, true, time.Time{}) // another process queued for a slot
		}
		return
	}
	b.mu.Lock()
	k := b.keys[payload]
	if k != nil {
		k.targeted = k.targeted || own
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
	if k == nil && own {
		b.passOn(payload)
	}
}

// passOn wakes the next process waiting on key.
func (b *Redis) passOn(key string) {
	if b.isDown() {
		return // waiters' timers still run
	}
	octx, cancel := b.opCtx(context.Background())
	defer cancel()
	_, _ = b.pass.run(octx, b.rdb, []string{b.names(key, nil).waiting}, b.wakePrefix, key) // lost: waiters' timers still run
}

// settle delivers the result of a hand-over to the waiter w claimed for it,
// or, if w left meanwhile, hands the lease on. requeued: the hand-over
// granted a slot and queued this process again for its other waiters.
// yielded: it left the slot to another process and queued this one.
func (b *Redis) settle(key string, w *rwaiter, l Lease, requeued, yielded bool) {
	b.mu.Lock()
	w.claimed, w.yielded = false, yielded
	if k := b.keys[key]; k != nil && requeued && l.ID != "" {
		k.full = true
	}
	gone := w.gone
	if !gone {
		w.slot <- l // never blocks: a claimed waiter is sent nothing else
	}
	b.mu.Unlock()
	if gone && l.ID != "" {
		b.handOn(key, l, w.req)
	}
}

// handOn gives a lease granted for r, which its waiter cannot use, to the
// first available waiter of the key with the same limits (compared as
// capped makes them, by the learned limits), or back to Redis.
func (b *Redis) handOn(key string, l Lease, r Request) {
	b.mu.Lock()
	if k := b.keys[key]; k != nil {
		limits := b.capped(r)
		for w := range k.waiters.all() {
			if w.available() && sameLimits(b.capped(w.req), limits) {
				w.slot <- l
				b.mu.Unlock()
				return
			}
		}
	}
	b.mu.Unlock()
	b.giveBack(l, r)
}

// giveBack releases a lease and refunds its window counts.
func (b *Redis) giveBack(l Lease, r Request) {
	if b.isDown() {
		if l.HoldsSlot() {
			b.orphan(l) // released, without a refund, when Redis answers
		}
		return
	}
	if known, _, _ := b.unhold(l); known {
		b.letGo(l.Key)
	}
	octx, cancel := b.opCtx(context.Background())
	defer cancel()
	if _, err := b.releaseScript(octx, l, r.Windows, r.units()); err == nil { // on failure the TTL frees the slot
		b.ledger.remove(r.Windows, l.Granted.UnixMilli(), r.units(), r.Key)
	}
}
