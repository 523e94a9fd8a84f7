// What an Observer is told of every attempt.

package wecom

import (
	"context"
	"log/slog"
	"time"
)

// Attempt describes one attempt of a call, for an Observer.
type Attempt struct {
	Method string
	Path   string
	// Number is 1 for the first attempt of a call, 2 for its first retry, ...
	Number int
	// ErrCode is WeCom's errcode (0 on success and when there was no answer).
	ErrCode int
	// Err is the attempt's error, nil on success. It never holds a token.
	Err error
	// Duration is the time from sending the request to its answer.
	Duration time.Duration
	// LeaseWait is the time spent waiting for the limiter before sending.
	LeaseWait time.Duration
	// Detached: the caller had given up (its context ended) before the
	// answer; the attempt went on without it, and its leases went back when
	// the answer came.
	Detached bool
	// Abandoned: the request was sent and no answer came (the attempt
	// timeout fired, or the connection broke). The call may still be running
	// at WeCom, so its concurrency slots were neither released nor renewed:
	// they stay taken for the abandoned hold (WithAbandonedHold), capacity
	// the other calls lose meanwhile.
	Abandoned bool
	// LimitChanges are the changes of the calls-in-flight limit of the API
	// learned from WeCom (see WithAdaptiveLimits) that this attempt noticed:
	// before it was sent, and from its 45033, in order.
	LimitChanges []LimitChange
	// Uncounted names the recipients of the call that no limit counted:
	// "@all", "toparty" or "totag" of an app message, whose members WeCom
	// finds itself. The per-member windows hold only for the members the
	// call named, and WeCom drops silently what goes over them.
	Uncounted []string
}

// Observer is called after every attempt of every call, gettoken included, in
// the calling goroutine, or, for an attempt that outlived its caller
// (Attempt.Detached), in the goroutine that finished it. It must be safe for
// concurrent use. If it panics, the call's leases are still released; the
// panic reaches the caller, or is logged when the caller has gone.
type Observer func(ctx context.Context, a Attempt)

// observe tells the observer of an attempt. One whose caller has gone
// (a.Detached) has no caller for a panic to reach: an observer's panic is
// logged, as is panicked, a panic of the attempt itself, whose observer is
// then not called.
func (p *pipeline) observe(ctx context.Context, a Attempt, panicked any) {
	if panicked != nil {
		p.cfg.logger.LogAttrs(ctx, slog.LevelError, "wecom: a call whose caller had gone panicked", slog.String("path", a.Path), slog.Any("panic", panicked))
		return
	}
	if p.cfg.observer == nil {
		return
	}
	if a.Detached {
		defer func() {
			if r := recover(); r != nil {
				p.cfg.logger.LogAttrs(ctx, slog.LevelError, "wecom: observer panicked", slog.String("path", a.Path), slog.Any("panic", r))
			}
		}()
	}
	p.cfg.observer(ctx, a)
}
