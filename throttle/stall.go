package throttle

import "time"

// StallAfter is the shortest wait a StallFunc hears of: waits for a slot,
// and shorter waits, are the limiter doing its job.
const StallAfter = time.Second

// Stall is a wait an Acquire has ahead of it for a reason other than busy
// slots: a full rate window (ReasonRate), a reserve after Redis lost the
// window's state (ReasonReserve) or a cooldown (ReasonCooldown), known to
// last more than StallAfter; or a Redis that has not answered for
// StallAfter (ReasonUnavailable: hung, or gone), told again every
// StallAfter while the acquisition waits for it to answer.
type Stall struct {
	Key    string
	Reason Reason
	// Until is when the refusing limit frees up, by the local clock: the
	// acquisition may go on then, or wait on for another limit. Zero when
	// not known (ReasonUnavailable).
	Until time.Time
}

// StallFunc hears of the stalls of an acquisition (Request.OnStall). It
// is called with no lock held, in the acquiring goroutine, or in a timer's
// for a Redis that does not answer; it must be safe for concurrent use and
// return quickly.
type StallFunc func(Stall)

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

// Stalled tells r's StallFunc, if any, of a wait for v until at (the
// local clock), when v is a timed refusal that lasts more than StallAfter.
func Stalled(r Request, v Verdict, at time.Time) {
	if r.OnStall != nil && !v.OK && v.Reason.Timed() && time.Until(at) > StallAfter {
		r.OnStall(Stall{Key: r.Key, Reason: v.Reason, Until: at})
	}
}
