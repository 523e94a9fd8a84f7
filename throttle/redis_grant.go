// Hand-overs and the cross-process grant protocol of the Redis backend: the
// messages a process receives (dispatch), grants published by another
// process's hand-over (parseGrant, takeGrant), wake-ups passed on (passOn,
// unqueue), and leases handed on to another waiter or given back (settle,
// handOn, giveBack).

package throttle

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// dispatch wakes the head waiter of the key a release or cooldown names, or
// takes a grant published to this process. A wake-up for a key nobody here
// waits on any more goes to the next process.
func (b *Redis) dispatch(channel, payload string) {
	if channel != b.channel && strings.Contains(payload, "\n") {
		b.takeGrant(payload)
		return
	}
	if rest, ok := strings.CutPrefix(payload, "\n"); ok && channel == b.channel {
		if proc, key, _ := strings.Cut(rest, "\n"); proc != b.proc {
			b.noteContended(key, true, time.Time{}) // another process queued for a slot
		}
		return
	}
	b.mu.Lock()
	k := b.keys[payload]
	if k != nil {
		if channel != b.channel {
			k.targeted = true
		}
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
	if k == nil && channel != b.channel {
		b.passOn(payload)
	}
}

// grant is a slot another process's hand-over granted this process.
type grant struct {
	lease Lease
	// req is the key and the limits it was granted under, in milliseconds.
	req Request
}

// parseGrant reads a grant the acquire script published: the lines key,
// lease id, granted and expires (unix ms), concurrency, TTL (ms), weight,
// and a limit and period (ms) per window. A malformed message still yields
// the key and lease id when they are there, so that the slot can be
// released.
func parseGrant(msg string) (grant, error) {
	f := strings.Split(msg, "\n")
	var g grant
	if len(f) < 2 || f[0] == "" || f[1] == "" {
		return g, fmt.Errorf("throttle: malformed grant %q", msg)
	}
	g.req.Key, g.lease.Key, g.lease.ID = f[0], f[0], f[1]
	bad := func() (grant, error) { return g, fmt.Errorf("throttle: malformed grant for %q", g.req.Key) }
	if len(f) < 7 || len(f)%2 != 1 {
		return bad()
	}
	var n [4]int64
	for i := range n {
		v, err := strconv.ParseInt(f[2+i], 10, 64)
		if err != nil || v <= 0 || v > math.MaxInt64/int64(time.Millisecond) {
			return bad()
		}
		n[i] = v
	}
	g.lease.Granted, g.lease.Expires = time.UnixMilli(n[0]), time.UnixMilli(n[1])
	g.req.Concurrency, g.req.TTL = int(n[2]), time.Duration(n[3])*time.Millisecond
	g.lease.Concurrency = g.req.Concurrency
	weight, err := strconv.Atoi(f[6])
	if err != nil || weight <= 0 {
		return bad()
	}
	g.req.Weight = weight
	for i := 7; i < len(f); i += 2 {
		limit, err1 := strconv.Atoi(f[i])
		period, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil || limit <= 0 || period < BucketsPerWindow || period > math.MaxInt64/int64(time.Millisecond) {
			return bad()
		}
		g.req.Windows = append(g.req.Windows, Window{Limit: limit, Period: time.Duration(period) * time.Millisecond})
	}
	if g.req.Validate() != nil || n[1] < n[0] {
		return bad()
	}
	return g, nil
}

// takeGrant gives a slot that another process's hand-over granted this one
// (msg, as published) to a waiter of the key with the limits it was granted
// under: one not asking Redis itself before one that is (its own answer
// then decides which lease it keeps; leave hands the other on). The grant
// queued this process again; with no waiter left to want more, it leaves
// that queue. A slot no waiter can use goes back, its window counts
// refunded.
func (b *Redis) takeGrant(msg string) {
	g, err := parseGrant(msg)
	if err != nil {
		if g.lease.ID != "" { // release what can be named, refunding nothing
			g.lease.Expires = time.UnixMilli(1) // held, of unknown expiry
			b.giveBack(g.lease, Request{Key: g.req.Key})
		}
		return
	}
	b.ledger.add(g.req.Key, g.req.Windows, g.lease.Granted.UnixMilli(), g.req.units(), nil)
	b.hold(b.eraNow(), g.lease) // a grant published since the subscription last broke
	b.mu.Lock()
	var to *rwaiter
	others := 0 // waiters left wanting slots
	k := b.keys[g.req.Key]
	if k != nil {
		to, others = k.waiterFor(g.req, true, b.capped), k.waiters.len()
	}
	if to != nil {
		others--
		to.slot <- g.lease // never blocks: it was empty, and b.mu is held
		k.full = k.full || others > 0
	}
	b.mu.Unlock()
	if others == 0 {
		b.unqueue(g.req.Key)
	}
	if to == nil {
		b.giveBack(g.lease, g.req)
	}
}

// unqueue takes this process out of the key's waiting processes.
func (b *Redis) unqueue(key string) {
	if b.isDown() {
		return // the queue entry expires; a grant it gets goes back
	}
	octx, cancel := b.opCtx(context.Background())
	defer cancel()
	_ = b.rdb.ZRem(octx, b.names(key, nil).waiting, b.proc) // lost: a grant it gets goes back
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
// yielded: it granted the slot to another process and queued this one.
func (b *Redis) settle(key string, w *rwaiter, l Lease, requeued, yielded bool) {
	b.mu.Lock()
	w.claimed = false
	w.yielded = yielded
	if k := b.keys[key]; k != nil && requeued && l.ID != "" {
		k.full = true
	}
	if !w.gone {
		w.slot <- l // never blocks: a claimed waiter is sent nothing else
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	if l.ID != "" {
		b.handOn(key, l, w.req)
	}
}

// handOn gives a lease granted for r, which its waiter cannot use, to another
// waiter of the key with the same limits, or back to Redis.
func (b *Redis) handOn(key string, l Lease, r Request) {
	b.mu.Lock()
	if k := b.keys[key]; k != nil {
		if w := k.waiterFor(r, false, b.capped); w != nil {
			w.slot <- l
			b.mu.Unlock()
			return
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
	ctx := context.Background()
	if known, _, _ := b.unhold(l); known {
		b.letGo(l.Key)
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	if _, err := b.releaseScript(octx, l, r.Windows, r.units()); err == nil { // on failure the TTL frees the slot
		b.ledger.remove(r.Windows, l.Granted.UnixMilli(), r.units(), r.Key)
	}
}
