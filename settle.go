// The last step of an attempt: settle its limits. Its leases go back at
// once when an answer came or the request never left; they stay taken
// while WeCom may still be working (no answer to a request sent); a 45009
// cools the API down before they go back; a 45033 lowers the limit
// learned for the API.

package wecom

import (
	"context"
	"errors"
	"log/slog"
)

// settle settles the leases of an attempt whose outcome a holds: its
// error, which is WeCom's answer when sent; unanswered: a request that may
// be running at WeCom, no answer having come back. It returns a with what
// settling learned.
func (p *pipeline) settle(ctx context.Context, cl *call, el *endpointLimits, t taken, sent, unanswered bool, a Attempt) Attempt {
	if t.stop != nil {
		t.stop()
	}
	bg := context.WithoutCancel(ctx)
	var ae *APIError
	if sent && errors.As(a.Err, &ae) {
		a.ErrCode = ae.Code
		if ae.Code == CodeConcurrencyLimited {
			if ch := p.refused(bg, cl, t.slot); ch != nil {
				a.LimitChanges = append(a.LimitChanges, *ch)
			}
		}
		if ae.Code == CodeFrequencyLimited {
			// Before the leases go back: nobody starts on this API until the block ends.
			block := p.block(cl.path, el, p.cfg.now())
			if err := p.cfg.limiter.Cooldown(bg, p.coolKey(cl, el), block); err != nil {
				p.cfg.logger.LogAttrs(ctx, slog.LevelError, "wecom: could not record cooldown", slog.String("path", cl.path), slog.String("error", err.Error()))
			}
			a.Err = &RateLimitError{Path: cl.path, RetryAfter: block, Err: ae}
		}
	}
	if unanswered {
		a.Abandoned = p.hold(ctx, cl.path, t.leases)
	} else {
		p.release(ctx, t.leases)
	}
	return a
}
