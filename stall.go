package wecom

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// stallLog tells of calls' long waits for their limits: the stall
// observer of each, the log once per limiter key (it keeps the stall last
// logged per key), not once per call.
type stallLog struct {
	logger   *slog.Logger
	observer StallObserver // or nil

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

// tell reports a stall of a call to path: to the stall observer, and in
// the log once per key.
func (l *stallLog) tell(ctx context.Context, path string, s throttle.Stall) {
	if l.news(s, time.Now()) {
		attrs := []slog.Attr{slog.String("path", path), slog.String("key", s.Key), slog.String("reason", stallReason(s.Reason))}
		if !s.Until.IsZero() {
			attrs = append(attrs, slog.Time("until", s.Until), slog.Duration("for", time.Until(s.Until).Round(time.Second)))
		}
		l.logger.LogAttrs(ctx, slog.LevelInfo, "wecom: calls wait for a limit", attrs...)
	}
	if l.observer != nil {
		l.observer(ctx, path, s)
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
		return "waiting on the limiter's Redis, which does not answer"
	}
	return r.String()
}
