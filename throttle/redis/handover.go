// This process's line of waiters for each key on the Redis backend (rkey,
// rwaiter; see line.go), and hand-overs: the messages a process receives
// (dispatch), wake-ups passed on (passOn), the waiters claimed for a slot
// (claim), and leases handed over (handOver, settle; for a batch, askFor),
// handed on (handOn) or given back (giveBack).

package redis

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// rkey is the local state of one key: its queue of waiters and the signal
// that wakes the head: true if it was this process's turn for a slot (not
// a cooldown broadcast), which a head that cannot use it passes on.
type rkey struct {
	waiters throttle.Line[*rwaiter]
	wake    chan bool
	// refused is the head's last refusal, which a waiter arriving behind it
	// uses to fail at once as the head would (a cooldown it does not wait out,
	// a wait past its deadline).
	refused *refusal
	// full: a hand-over took the key's last free slot and queued this
	// process again for its other waiters, so the next head waits for a
	// wake-up without asking first.
	full bool
}

// refusal is a head's refusal: the verdict, and when its limit frees up
// on the local clock.
type refusal struct {
	v  throttle.Verdict
	at time.Time
}

type rwaiter struct {
	throttle.Waiter
	// slot receives a lease a Release of this process handed over, or, after
	// a claim, a zero Lease when the hand-over got none. It holds at most one.
	slot chan throttle.Lease
	// told is the stall last reported to the caller (touched by its own
	// goroutine only, as the head asks).
	told throttle.Told

	// Guarded by Backend.mu:
	busy    bool // the head is in a round trip of its own
	claimed bool // a Release is getting a slot for it; one message on slot follows
	gone    bool // it left the queue
	// yielded: its hand-over left the slot to another process and queued
	// this one, so it waits for its turn without asking first.
	yielded bool
}

// wakeUp wakes the head of k, own telling whether it is this process's
// turn for a slot. One wake-up waits at most: this one, or the one before
// if that was this process's turn. The caller holds Backend.mu.
func (k *rkey) wakeUp(own bool) {
	select {
	case was := <-k.wake:
		own = own || was
	default:
	}
	k.wake <- own
}

// available reports whether w, a waiter in line, may be handed a slot now:
// it is not asking Redis itself, and nothing is claimed for it or waits in
// its slot. The caller holds Backend.mu.
func (w *rwaiter) available() bool { return !w.busy && !w.claimed && len(w.slot) == 0 }

// sameLimits reports whether a lease granted for a may serve b: the same
// concurrency, lease TTL, weight and windows.
func sameLimits(a, b throttle.Request) bool {
	return a.Concurrency == b.Concurrency && a.LeaseTTL() == b.LeaseTTL() && a.Units() == b.Units() && slices.Equal(a.Windows, b.Windows)
}

// leave takes a waiter out of its key's queue and hands the turn on. A lease
// handed over to it that it did not take goes to another waiter. The last
// waiter of a key to leave without a lease passes on any wake-up it may have
// taken, so that a freed slot does not wait for a timer.
func (b *Backend) leave(key string, k *rkey, w *rwaiter, served bool) {
	b.mu.Lock()
	w.gone = true
	var orphan throttle.Lease
	select {
	case orphan = <-w.slot:
	default:
	}
	wasHead := k.waiters.Leave(w) // false if the head already failed it
	next, more := k.waiters.Head()
	if !more {
		if b.keys[key] == k { // a waiter failed earlier may leave after a new entry
			delete(b.keys, key)
		}
	} else if wasHead {
		close(next.Turn)
	}
	b.mu.Unlock()
	if orphan.ID != "" {
		b.handOn(key, orphan, w.Req)
	}
	if !more && wasHead && !served {
		b.passOn(key)
	}
}

// maxBatch bounds the leases one ask takes for the waiters of a process.
const maxBatch = 64

// dispatch handles a message of the subscription: on the broadcast
// channel, a notice that another process queued for a key's slot, or a
// key's cooldown, which wakes its head; on this process's own, its turn
// for a slot of the key, which wakes the head, or, if nobody here waits on
// the key any more, goes to the next process.
func (b *Backend) dispatch(channel, payload string) {
	own := channel != b.channel
	if rest, ok := strings.CutPrefix(payload, "\n"); ok && !own {
		if proc, key, _ := strings.Cut(rest, "\n"); proc != b.proc {
			b.noteContended(key, true, time.Time{}) // another process queued for a slot
		}
		return
	}
	if !own { // the key's cooldown: no call starts from its block
		b.dropBlock(payload)
	}
	b.mu.Lock()
	k := b.keys[payload]
	if k != nil {
		k.wakeUp(own)
	}
	b.mu.Unlock()
	if k == nil && own {
		b.passOn(payload)
	}
}

// passOn wakes the next process waiting on key.
func (b *Backend) passOn(key string) {
	if b.isDown() {
		return // waiters' timers still run
	}
	octx, cancel := b.opCtx(context.Background())
	defer cancel()
	_, _ = b.pass.run(octx, b.rdb, []string{b.names(key, nil).waiting}, b.wakePrefix, key) // lost: waiters' timers still run
}

// claim claims for a hand-over, in arrival order, up to n available waiters
// of k (nil: none) other than but whose limits, as capped makes them, are
// those of r (nil: any limits). The caller holds Backend.mu.
func (b *Backend) claim(k *rkey, r *throttle.Request, but *rwaiter, n int) (ws []*rwaiter) {
	if k == nil {
		return nil
	}
	var limits throttle.Request
	if r != nil {
		limits = b.capped(*r)
	}
	for w := range k.waiters.All() {
		if len(ws) == n {
			break
		}
		if w != but && w.available() && (r == nil || sameLimits(b.capped(w.Req), limits)) {
			w.claimed = true
			ws = append(ws, w)
		}
	}
	return ws
}

// claimNext claims the first available waiter of key (nil if none) for a
// slot a Release frees, and reports whether more than one waiter queues.
func (b *Backend) claimNext(key string) (next *rwaiter, more bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.keys[key]
	if ws := b.claim(k, nil, nil, 1); len(ws) > 0 {
		next = ws[0]
	}
	return next, k != nil && k.waiters.Len() > 1
}

// handOver releases l and hands its slot to next, the waiter claimed for it,
// in one round trip, unless another process has waited longer for it; this
// process stays queued if more wait.
func (b *Backend) handOver(ctx context.Context, l throttle.Lease, next *rwaiter, more bool) error {
	res, more, err := b.askFor(ctx, next, l, more)
	b.settle(l.Key, next, res.lease, more && res.full, err == nil && res.v.Reason == reasonYielded)
	return b.released(l, res.held, err)
}

// askFor runs the acquire script for w (the head of its key's line, or the
// waiter a hand-over of release serves), queuing this process again if
// more (others of its waiters queue). It takes leases too for the other
// waiters that a lease under w's limits serves, and hands them over, unless
// the key's last answer was a refusal for want of a slot: a key whose slots
// are all taken frees one at a time. more becomes whether some waiter is
// left beyond the batch.
func (b *Backend) askFor(ctx context.Context, w *rwaiter, release throttle.Lease, more bool) (acquireResult, bool, error) {
	key := w.Req.Key
	var batch []*rwaiter
	waiting, plain := 0, release.ID == ""
	b.mu.Lock()
	if k := b.keys[key]; k != nil { // nil: w left meanwhile
		// one slot: a batch would get no more
		if more && b.capped(w.Req).Concurrency != 1 && (k.refused == nil || k.refused.v.Reason != throttle.ReasonConcurrency) {
			batch = b.claim(k, &w.Req, w, maxBatch-1)
			more = k.waiters.Len()-1 > len(batch)
		}
		waiting, plain = k.waiters.Len(), plain && k.refused == nil // refused: queued, the script dequeues it (a lock claims no batch)
	}
	block, span := b.blockFor(w.Req, waiting), b.spanFor(w.Req)
	b.mu.Unlock()
	res, err := b.attempt(ctx, acquireArgs{r: w.Req, take: true, batch: len(batch), queue: true, release: release, requeue: more, block: block, span: span, plain: plain})
	extra := append(res.extra, make([]throttle.Lease, len(batch))...) // a waiter the limits left out gets none
	for i, x := range batch {
		b.settle(key, x, extra[i], false, false)
	}
	return res, more, err
}

// settle delivers the result of a hand-over to the waiter w claimed for it,
// or, if w left meanwhile, hands the lease on. full: the hand-over granted
// the key's last free slot and queued this process again for its other
// waiters (rkey.full). yielded: it left the slot to another process and
// queued this one.
func (b *Backend) settle(key string, w *rwaiter, l throttle.Lease, full, yielded bool) {
	b.mu.Lock()
	w.claimed, w.yielded = false, yielded
	if k := b.keys[key]; k != nil && full && l.ID != "" {
		k.full = true
	}
	gone := w.gone
	if !gone {
		w.slot <- l // never blocks: a claimed waiter is sent nothing else
	}
	b.mu.Unlock()
	if gone && l.ID != "" {
		b.handOn(key, l, w.Req)
	}
}

// handOn gives a lease granted for r, which its waiter cannot use, to the
// first available waiter of the key with the same limits, or back to Redis.
// A lease of an earlier era goes back: Redis may not count its slot (see
// REDIS.md, Eras).
func (b *Backend) handOn(key string, l throttle.Lease, r throttle.Request) {
	b.mu.Lock()
	var ws []*rwaiter
	if h := b.heldOf(l); h == nil || h.era == b.era.Load() {
		ws = b.claim(b.keys[key], &r, nil, 1)
	}
	b.mu.Unlock()
	if len(ws) == 0 {
		b.giveBack(l, r)
		return
	}
	b.settle(key, ws[0], l, false, false)
}

// giveBack releases a lease and refunds its window counts.
func (b *Backend) giveBack(l throttle.Lease, r throttle.Request) {
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
	_, err := b.releaseScript(octx, l, r.Windows, r.Units())
	switch {
	case err == nil:
		b.ledger.remove(r.Windows, l.Granted.UnixMilli(), r.Units(), r.Key)
	case l.HoldsSlot():
		if out, _ := b.failed("release", err); out {
			b.orphan(l) // released, without a refund, when Redis answers
		} // else the TTL frees the slot
	}
}
