// The Redis backend's side of the line (line.go): per throttle key (rkey),
// the line of this process's waiters (rwaiter), the head's last refusal,
// and how a waiter is chosen for a slot and leaves the line.

package throttle

import (
	"slices"
	"time"
)

// rkey is the local state of one key: its queue of waiters and the signal
// that wakes the head: true if it was this process's turn for a slot (not
// a cooldown broadcast), which a head that cannot use it passes on.
type rkey struct {
	waiters line[*rwaiter]
	wake    chan bool
	// refused is the head's last refusal, which a waiter arriving behind it
	// uses to fail at once as the head would (a cooldown it does not wait out,
	// a wait past its deadline).
	refused *refusal
	// full: a hand-over found every slot held and queued this process again
	// for its other waiters, so the next head waits without asking first.
	full bool
}

// refusal is a head's refusal: the verdict, and when its limit frees up
// on the local clock.
type refusal struct {
	v  verdict
	at time.Time
}

type rwaiter struct {
	waiter
	// slot receives a lease a Release of this process handed over, or, after
	// a claim, a zero Lease when the hand-over got none. It holds at most one.
	slot chan Lease
	// told is the stall last reported to the caller (touched by its own
	// goroutine only, as the head asks).
	told told

	// Guarded by Redis.mu:
	busy    bool // the head is in a round trip of its own
	claimed bool // a Release is getting a slot for it; one message on slot follows
	gone    bool // it left the queue
	// yielded: its hand-over left the slot to another process and queued
	// this one, so it waits for its turn without asking first.
	yielded bool
}

// available reports whether w, a waiter in line, may be handed a slot now:
// it is not asking Redis itself, and nothing is claimed for it or waits in
// its slot. The caller holds Redis.mu.
func (w *rwaiter) available() bool { return !w.busy && !w.claimed && len(w.slot) == 0 }

// sameLimits reports whether a lease granted for a may serve b: the same
// concurrency, lease TTL, weight and windows.
func sameLimits(a, b Request) bool {
	return a.Concurrency == b.Concurrency && a.LeaseTTL() == b.LeaseTTL() && a.units() == b.units() && slices.Equal(a.Windows, b.Windows)
}

// leave takes a waiter out of its key's queue and hands the turn on. A lease
// handed over to it that it did not take goes to another waiter. The last
// waiter of a key to leave without a lease passes on any wake-up it may have
// taken, so that a freed slot does not wait for a timer.
func (b *Redis) leave(key string, k *rkey, w *rwaiter, served bool) {
	b.mu.Lock()
	w.gone = true
	var orphan Lease
	select {
	case orphan = <-w.slot:
	default:
	}
	wasHead := k.waiters.leave(w) // false if the head already failed it
	next, more := k.waiters.head()
	if !more {
		if b.keys[key] == k { // a waiter failed earlier may leave after a new entry
			delete(b.keys, key)
		}
	} else if wasHead {
		close(next.turn)
	}
	b.mu.Unlock()
	if orphan.ID != "" {
		b.handOn(key, orphan, w.req)
	}
	if !more && wasHead && !served {
		b.passOn(key)
	}
}
