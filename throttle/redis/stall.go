package redis

import (
	"sync"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

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
	return s.inflight > 0 && time.Since(s.last) > throttle.StallAfter
}

// tellSilence tells the StallFunc of w, a waiter of its key's line, once,
// that Redis keeps the process waiting: it does not answer, or is known
// down.
func (b *Backend) tellSilence(w *rwaiter) {
	if w.Req.OnStall != nil && (b.quiet.silent() || b.isDown()) && w.told.News(throttle.Verdict{Reason: throttle.ReasonUnavailable}, time.Time{}) {
		w.Req.OnStall(throttle.Stall{Key: w.Req.Key, Reason: throttle.ReasonUnavailable})
	}
}

// watchStall tells r's StallFunc, once StallAfter has passed, that the
// acquisition of r waits on a Redis that does not answer; the function it
// returns ends the wait (and the telling, if it has not come).
func watchStall(r throttle.Request) (stop func() bool) {
	f := r.OnStall
	if f == nil {
		return func() bool { return false }
	}
	return time.AfterFunc(throttle.StallAfter, func() { f(throttle.Stall{Key: r.Key, Reason: throttle.ReasonUnavailable}) }).Stop
}
