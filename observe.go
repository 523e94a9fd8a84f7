// The observer of a client's attempts, told of each as it ends.

package wecom

import (
	"context"
	"log/slog"
)

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
