package wecom

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// StallObserver hears when a call is about to wait more than
// throttle.StallAfter (a second) for its limits for a reason other than busy
// slots: a full rate window, a reserve the limiter's Redis holds after it
// lost its state, a cooldown after a 45009, a daily count spent until
// midnight CST, or the limiter's Redis not answering for a second. s says
// which limit (s.Key), why (s.Reason) and until when (s.Until, zero when
// not known). It is called before the wait, or during it for a Redis that
// does not answer; it must be safe for concurrent use and return quickly.
type StallObserver func(ctx context.Context, path string, s throttle.Stall)

// WithStallObserver sets a hook told of every call's long waits for its
// limits (see StallObserver). Whether or not one is set, the client logs
// each stall at Info once per limiter key, until that stall ends.
func WithStallObserver(o StallObserver) Option {
	return func(c *config) error {
		if o == nil {
			return invalid("stall observer", "nil")
		}
		c.stallObserver = o
		return nil
	}
}

// stallLog is the stall last logged per limiter key, so that a wait is
// logged once per key, not once per call.
type stallLog struct {
	mu   sync.Mutex
	last map[string]throttle.Stall // Until set for those without an end: a minute after the log
}

// news reports whether s is a stall not logged yet: none in force on its
// key, or another reason, or an end later by more than StallAfter. A stall
// without a known end counts as in force for a minute.
func (l *stallLog) news(s throttle.Stall, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = make(map[string]throttle.Stall)
	}
	if s.Until.IsZero() {
		s.Until = now.Add(time.Minute)
		if p, ok := l.last[s.Key]; ok && p.Until.After(now) && p.Reason == s.Reason {
			return false
		}
	}
	if p, ok := l.last[s.Key]; ok && p.Until.After(now) && p.Reason == s.Reason && s.Until.Sub(p.Until) <= throttle.StallAfter {
		return false
	}
	if len(l.last) >= 1024 { // keep the map small: forget the stalls that ended
		for k, p := range l.last {
			if !p.Until.After(now) {
				delete(l.last, k)
			}
		}
	}
	l.last[s.Key] = s
	return true
}

// stallContext returns ctx under which the limiter tells the client of the
// call's stalls.
func (p *pipeline) stallContext(ctx context.Context, path string) context.Context {
	return throttle.WithStallFunc(ctx, func(s throttle.Stall) { p.stalled(ctx, path, s) })
}

// stalled reports a stall of a call to path: to the stall observer, and in
// the log once per key.
func (p *pipeline) stalled(ctx context.Context, path string, s throttle.Stall) {
	if p.stalls.news(s, time.Now()) {
		attrs := []slog.Attr{slog.String("path", path), slog.String("key", s.Key), slog.String("reason", stallReason(s.Reason))}
		if !s.Until.IsZero() {
			attrs = append(attrs, slog.Time("until", s.Until), slog.Duration("for", time.Until(s.Until).Round(time.Second)))
		}
		p.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "wecom: calls wait for a limit", attrs...)
	}
	if p.cfg.stallObserver != nil {
		p.cfg.stallObserver(ctx, path, s)
	}
}

// stallReason says why a stall waits, for a log line.
func stallReason(r throttle.Reason) string {
	switch r {
	case throttle.ReasonReserve:
		return "reserve after the limiter's Redis lost its state"
	case throttle.ReasonCooldown:
		return "cooldown after a 45009"
	case throttle.ReasonRate:
		return "rate window full"
	case throttle.ReasonUnavailable:
		return "the limiter's Redis does not answer"
	}
	return r.String()
}
