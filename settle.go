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
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// delivery is what became of an attempt's request, as settle needs it.
type delivery struct {
	// sent: the request went out, and the attempt's error, if any, is its
	// answer's (or the transport's).
	sent bool
	// unanswered: it may be running at WeCom, no answer having come back.
	unanswered bool
}

// settle settles the leases h of an attempt whose outcome is d and a.Err,
// and returns a with what settling learned.
func (p *pipeline) settle(ctx context.Context, cl *call, el *endpointLimits, h held, d delivery, a Attempt) Attempt {
	if h.stop != nil {
		h.stop()
	}
	bg := context.WithoutCancel(ctx)
	var ae *APIError
	if d.sent && errors.As(a.Err, &ae) {
		a.ErrCode = ae.Code
		if ae.Code == CodeConcurrencyLimited {
			if ch := p.refused(bg, cl, h.slot); ch != nil {
				a.LimitChanges = append(a.LimitChanges, *ch)
			}
		}
		if ae.Code == CodeFrequencyLimited {
			// Before the leases go back: nobody starts on this API until the block ends.
			block := p.block(cl.path, el, p.cfg.now())
			p.cool(bg, cl.path, p.coolKey(cl, el), block)
			// A block longer than the IP's windows (a day's or a month's
			// count spent) is the corp's own.
			if ip, longest := p.ipKey(cl, el); ip != "" && block <= longest && p.ipBlocked(bg, ip, block) {
				p.cool(bg, cl.path, ip, block)
			}
			a.Err = &RateLimitError{Path: cl.path, RetryAfter: block, Err: ae}
		}
	}
	if d.unanswered {
		a.Abandoned = p.hold(ctx, cl.path, h.leases)
	} else {
		p.release(ctx, h.leases)
	}
	return a
}

// markMargin is how much longer a corp's mark of a 45009 on an egress lives
// than the IP's (ipBlocked): more than a mark's round trip can take.
const markMargin = 10 * time.Second

// cool keeps the calls that take key from starting for d, fleet-wide.
func (p *pipeline) cool(ctx context.Context, path, key string, d time.Duration) {
	if err := p.cfg.limiter.Cooldown(ctx, key, d); err != nil {
		p.cfg.logger.LogAttrs(ctx, slog.LevelError, "wecom: could not record cooldown", slog.String("path", path), slog.String("error", err.Error()))
	}
}

// ipBlocked reports whether a 45009 to a call sent from the fleet's egress
// (its per-IP window on ipKey) shows that WeCom blocked the IP for the API,
// every corp sent from it, rather than the call's corp. The answer does not
// say which window was exceeded: a first corp refused is taken as its own
// (its key cools), and a second corp refused on the same IP and API within
// the first's block shows it was the IP's. Each refusal marks the block so
// for the fleet, with a lock held for the block (never released): one per
// corp, so that the calls of a corp refused together count once, and one
// for the IP and API, which the first corp takes and the second finds
// held. The corp's mark outlives the IP's by markMargin, so that the
// corp's own refusal after its block cannot find its mark gone and the IP's
// still held. When the limiter cannot tell (an error, or its era changed
// between the marks: Redis restarted, or stopped answering and a fallback
// took over), the refusal stays the corp's, and the marks taken are given
// back, as they may live in two stores.
func (p *pipeline) ipBlocked(ctx context.Context, ipKey string, block time.Duration) bool {
	era := p.era()
	corp, err := p.mark(ctx, p.corpTag()+ipKey, block+markMargin)
	if err != nil || corp == nil {
		return false // unknown, or this corp's refusal in this block already counted
	}
	ip, err := p.mark(ctx, ipKey, block)
	if err != nil || p.era() != era {
		for _, l := range []*throttle.Lease{corp, ip} {
			if l != nil {
				_ = p.cfg.limiter.Release(ctx, *l)
			}
		}
		return false
	}
	if ip != nil {
		return false // the first corp refused in this block
	}
	p.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: a second corp refused 45009 from one egress: WeCom blocked the IP for the API",
		slog.String("key", ipKey), slog.Duration("block", block))
	return true
}

// mark takes key's mark of a 45009 for ttl (ipBlocked): its lease, nil when
// the mark is held already, or the error when the limiter could not tell.
func (p *pipeline) mark(ctx context.Context, key string, ttl time.Duration) (*throttle.Lease, error) {
	l, err := p.cfg.limiter.TryAcquire(ctx, throttle.Request{Key: key + "~45009", Concurrency: 1, TTL: ttl})
	var le *throttle.LimitError
	switch {
	case err == nil:
		return &l, nil
	case errors.As(err, &le) && le.Reason == throttle.ReasonConcurrency:
		return nil, nil
	}
	return nil, err
}

// block returns how long an API is left alone after a 45009 at now. WeCom
// blocks an API for the window that was exceeded, but does not say which:
// the first 45009 is taken for the shortest window's (a minute), and one that
// comes within that long after the block ended, for the next longer
// window's (an hour, then the rest of the CST day), as the shorter block
// was not enough. After a block to the end of the day, a new day starts
// again from the shortest. Limits.BlockFor, when set, is the block whatever
// comes.
func (p *pipeline) block(path string, el *endpointLimits, now time.Time) time.Duration {
	if el.blockFor > 0 {
		return el.blockFor
	}
	ps := el.periods()
	key := p.apiKey(path)
	p.blocks.mu.Lock()
	defer p.blocks.mu.Unlock()
	level := 0
	if prev, ok := p.blocks.last[key]; ok {
		switch {
		case now.Before(prev.end): // one incident: a call sent before the block began
			level = prev.level
		case ps[prev.level].Calendar(): // a new CST day or month, whose counts start afresh
		case now.Before(prev.end.Add(ps[0].Duration())):
			level = min(prev.level+1, len(ps)-1)
		}
	}
	d := ps[level].BlockAt(now).Sub(now)
	if p.blocks.last == nil {
		p.blocks.last = make(map[string]lastBlock)
	}
	p.blocks.last[key] = lastBlock{level: level, end: now.Add(d)}
	return d
}

// refused learns from a 45033 to a call that held a slot of its API's
// calls-in-flight cap, and returns the change to report, if any.
func (p *pipeline) refused(ctx context.Context, cl *call, slot apiSlot) *LimitChange {
	if slot.limit == 0 {
		return nil
	}
	ch, err := p.learner.Refused(ctx, p.apiKey(cl.path), slot.configured, slot.limit)
	if err != nil {
		p.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: the limit learned from a 45033 holds in this client only",
			slog.String("path", cl.path), slog.String("error", err.Error()))
	}
	if ch == nil {
		return nil
	}
	lc := limitChange(cl.path, slot.configured, ch)
	p.cfg.logger.LogAttrs(ctx, slog.LevelInfo, logMessage, lc.attrs()...)
	return &lc
}
