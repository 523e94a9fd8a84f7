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
// last more than StallAfter; or a Redis that has not answered for
// StallAfter (ReasonUnavailable: hung, or gone and not yet known to be).
type Stall struct {
	Key    string
	Reason Reason
	// Until is when the refusing limit frees up, by the local clock: the
	// acquisition may go on then, or wait on for another limit. Zero when
	// not known (ReasonUnavailable).
	Until time.Time
}

// StallFunc hears of the stalls of the acquisitions made under a context
// (see WithStallFunc). It is called with no lock held, in the acquiring
// goroutine, or in a timer's for a Redis that does not answer; it must be
// safe for concurrent use and return quickly.
type StallFunc func(Stall)

type stallKey struct{}

// WithStallFunc returns a copy of ctx under which Acquire calls f for each
// Stall ahead of it: when it arrives behind a timed refusal, when the head
// of its key's line is refused so (on Redis, a process's waiters of a key
// queue behind one head), and when Redis has not answered for StallAfter.
func WithStallFunc(ctx context.Context, f StallFunc) context.Context {
	return context.WithValue(ctx, stallKey{}, f)
}

// StallFuncOf returns the StallFunc that WithStallFunc put under ctx, or
// nil: for backends, which tell it of their stalls.
func StallFuncOf(ctx context.Context) StallFunc {
	f, _ := ctx.Value(stallKey{}).(StallFunc)
	return f
}

// Told is the last stall a waiter reported, so that a head asking again
// every second reports a wait once, not every second.
type Told struct {
	reason Reason
	at     time.Time
}

// News reports whether a refusal for v until at differs from the one last
// told (another reason, or an end moved by more than StallAfter), and
// records it.
func (t *Told) News(v Verdict, at time.Time) bool {
	if v.Reason == t.reason && at.Sub(t.at).Abs() <= StallAfter {
		return false
	}
	t.reason, t.at = v.Reason, at
	return true
}

// WatchStall tells ctx's StallFunc, once StallAfter has passed, that the
// acquisition of key waits on a Redis that does not answer; the function it
// returns ends the wait (and the telling, if it has not come).
func WatchStall(ctx context.Context, key string) (stop func() bool) {
	f, _ := ctx.Value(stallKey{}).(StallFunc)
	if f == nil {
		return func() bool { return false }
	}
	return time.AfterFunc(StallAfter, func() { f(Stall{Key: key, Reason: ReasonUnavailable}) }).Stop
}

// Stalled tells ctx's StallFunc, if any, of a wait for v until at (the
// local clock), when v is a timed refusal that lasts more than StallAfter.
func Stalled(ctx context.Context, key string, v Verdict, at time.Time) {
	if f, _ := ctx.Value(stallKey{}).(StallFunc); f != nil && !v.OK && v.Reason.Timed() && time.Until(at) > StallAfter {
		f(Stall{Key: key, Reason: v.Reason, Until: at})
	}
}
