package redis

import (
	"context"
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

// tellSilence tells ctx's StallFunc, once per waiter w of key, that Redis
// keeps the process waiting.
func (b *Backend) tellSilence(ctx context.Context, key string, w *rwaiter) {
	if f := throttle.StallFuncOf(ctx); f != nil && b.quiet.silent() && w.told.News(throttle.Verdict{Reason: throttle.ReasonUnavailable}, time.Time{}) {
		f(throttle.Stall{Key: key, Reason: throttle.ReasonUnavailable})
	}
}
