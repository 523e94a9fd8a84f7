package throttle

import (
	"context"
	"time"
)

// StallAfter is the shortest wait a StallFunc hears of: waits for a slot,
// and shorter waits, are the limiter doing its job.
const StallAfter = time.Second

// Stall is a wait an Acquire has ahead of it for a reason other than busy
// slots: a full rate window (ReasonRate), a reserve after Redis lost the
// window's state (ReasonReserve) or a cooldown (ReasonCooldown), known to
// last more than StallAfter.
type Stall struct {
	Key    string
	Reason Reason
	// Until is when the refusing limit frees up, by the local clock: the
	// acquisition may go on then, or wait on for another limit.
	Until time.Time
}

// StallFunc hears of the stalls of the acquisitions made under a context
// (see WithStallFunc). It is called in the acquiring goroutine, with no
// lock held, and must be safe for concurrent use.
type StallFunc func(Stall)

type stallKey struct{}

// WithStallFunc returns a copy of ctx under which Acquire calls f when it is
// about to wait more than StallAfter for a rate window, a reserve or a
// cooldown: when the acquisition arrives behind such a refusal, and when
// the head of a key's line is refused so (on Redis, where a process's
// waiters of a key queue behind one head that asks Redis). A caller that
// waits in silence for an hour is what it exists to prevent.
func WithStallFunc(ctx context.Context, f StallFunc) context.Context {
	return context.WithValue(ctx, stallKey{}, f)
}

// told is the last stall a waiter reported, so that a head asking again
// every second reports a wait once, not every second.
type told struct {
	reason Reason
	at     time.Time
}

// news reports whether a refusal for v until at differs from the one last
// told (another reason, or an end moved by more than StallAfter), and
// records it.
func (t *told) news(v verdict, at time.Time) bool {
	if v.reason == t.reason && at.Sub(t.at).Abs() <= StallAfter {
		return false
	}
	t.reason, t.at = v.reason, at
	return true
}

// stalled tells ctx's StallFunc, if any, of a wait for v until at (the
// local clock), when v is a timed refusal that lasts more than StallAfter.
func stalled(ctx context.Context, key string, v verdict, at time.Time) {
	f, _ := ctx.Value(stallKey{}).(StallFunc)
	if f == nil || v.ok || !v.reason.timed() || time.Until(at) <= StallAfter {
		return
	}
	f(Stall{Key: key, Reason: v.reason, Until: at})
}
