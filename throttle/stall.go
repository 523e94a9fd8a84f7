package throttle

import (
	"sync"
	"time"
)

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

// tell calls f with s, if f is set.
func (f StallFunc) tell(s Stall) {
	if f != nil {
		f(s)
	}
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

// stallAfter tells r's StallFunc, once StallAfter has passed, that the
// acquisition of r waits on a Redis that does not answer; the function it
// returns ends the wait (and the telling, if it has not come).
func stallAfter(r Request) (stop func() bool) {
	f := r.OnStall
	if f == nil {
		return func() bool { return false }
	}
	return time.AfterFunc(StallAfter, func() { f(Stall{Key: r.Key, Reason: ReasonUnavailable}) }).Stop
}

// silence tells whether Redis keeps this process waiting: a round trip is
// in progress and none has ended for StallAfter. Waiters that a round trip
// of another call would serve (a hand-over) learn so from it.
type silence struct {
	mu       sync.Mutex
	inflight int
	last     time.Time // when a round trip last ended, or one began with none in progress
}

// begin notes a round trip; the function it returns notes its end.
func (s *silence) begin() (end func()) {
	s.mu.Lock()
	if s.inflight == 0 {
		s.last = time.Now()
	}
	s.inflight++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.inflight--
		s.last = time.Now()
		s.mu.Unlock()
	}
}

// silent reports whether Redis keeps this process waiting (see silence).
func (s *silence) silent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight > 0 && time.Since(s.last) > StallAfter
}

// tellSilence tells the StallFunc of w, a waiter of its key's line, once,
// that Redis keeps the process waiting: it does not answer, or is known
// down.
func (b *Redis) tellSilence(w *rwaiter) {
	if w.req.OnStall != nil && (b.quiet.silent() || b.isDown()) && w.told.news(verdict{reason: ReasonUnavailable}, time.Time{}) {
		w.req.OnStall(Stall{Key: w.req.Key, Reason: ReasonUnavailable})
	}
}

// stalled tells r's StallFunc, if any, of a wait for v until at (the
// local clock), when v is a timed refusal that lasts more than StallAfter.
func stalled(r Request, v verdict, at time.Time) {
	if r.OnStall != nil && !v.ok && v.reason.timed() && time.Until(at) > StallAfter {
		r.OnStall(Stall{Key: r.Key, Reason: v.reason, Until: at})
	}
}
