package wecom

import (
	"context"
	"log/slog"

	"github.com/wecomkit/wecom/throttle"
)

// Limits learned from WeCom. When WeCom answers 45033 to a call that held
// one of the calls-in-flight slots of its API, WeCom gives the corp fewer
// than the client was told (another system shares the budget, or WeCom
// lowered it): the client lowers that (corp, API)'s limit below what the
// call was granted under, for every client sharing the limiter backend, and
// raises it by one after each quiet period without a refusal, never above
// the configured limit (throttle.Learner: additive increase, multiplicative
// decrease). The observer sees each change (Attempt.LimitChanges).

// adaptive is what the learning options asked for, until New applies it.
type adaptive struct {
	off  bool
	aimd throttle.AIMD
}

// WithAdaptiveLimits sets how limits are learned from WeCom's 45033 answers
// (on by default, with the zero throttle.AIMD: a drop to 90% of the slots a
// refused call was granted under, by at least one, and one more slot after
// each quiet minute). The learned limits are kept in the limiter backend
// when it keeps them (throttle.LimitStore: Memory and Redis do), so that
// every client sharing it learns at once; otherwise in this client.
func WithAdaptiveLimits(a throttle.AIMD) Option {
	return func(c *config) error {
		if a.Backoff < 0 || a.Backoff >= 1 || a.Quiet < 0 {
			return invalid("adaptive limits", "backoff %v not in [0, 1) or negative quiet period %s", a.Backoff, a.Quiet)
		}
		c.adaptive = adaptive{aimd: a}
		return nil
	}
}

// WithoutAdaptiveLimits turns learning off: the configured limits hold
// whatever WeCom answers.
func WithoutAdaptiveLimits() Option {
	return func(c *config) error {
		c.adaptive.off = true
		return nil
	}
}

// learner learns the calls-in-flight limit of each API from WeCom's
// answers: a *throttle.Learner, or notLearning.
type learner interface {
	// Limit returns the limit learned for key, at most configured, and
	// a change to report (a rise after a quiet period), if any.
	Limit(ctx context.Context, key string, configured int) (int, *throttle.Change)
	// Refused learns from a 45033 to a call granted under slots.
	Refused(ctx context.Context, key string, configured, under int) (*throttle.Change, error)
}

// notLearning is the learner when learning is off: the configured limits
// hold whatever WeCom answers.
type notLearning struct{}

func (notLearning) Limit(_ context.Context, _ string, configured int) (int, *throttle.Change) {
	return configured, nil
}

func (notLearning) Refused(context.Context, string, int, int) (*throttle.Change, error) {
	return nil, nil
}

// newLearner returns the client's learner.
func (p *pipeline) newLearner() learner {
	if p.cfg.adaptive.off {
		return notLearning{}
	}
	store, ok := p.cfg.limiter.(throttle.LimitStore)
	if !ok {
		store = throttle.NewMemory()
	}
	return throttle.NewLearner(store, p.cfg.adaptive.aimd, 0)
}

// apiSlot is the calls-in-flight cap of its API an attempt asks or was
// granted under (learned, at most the configured one); zero: none.
type apiSlot struct{ limit, configured int }

// adapt lowers the calls-in-flight cap of the call's API in reqs to the
// limit learned for it, and returns what it asked under and the changes
// to report.
func (p *pipeline) adapt(ctx context.Context, cl *call, reqs []leaseRequest) (slot apiSlot, changes []LimitChange) {
	key := p.apiKey(cl.path)
	for i := range reqs {
		if reqs[i].Key != key || reqs[i].Concurrency == 0 {
			continue
		}
		limit, ch := p.learner.Limit(ctx, key, reqs[i].Concurrency)
		slot = apiSlot{limit: limit, configured: reqs[i].Concurrency}
		reqs[i].Concurrency = limit
		if ch != nil {
			lc := limitChange(cl.path, slot.configured, ch)
			p.cfg.logger.LogAttrs(ctx, slog.LevelInfo, logMessage, lc.attrs()...)
			changes = append(changes, lc)
		}
	}
	return slot, changes
}

// granted returns the cap the API's slot was granted under, which may be
// lower than adapt asked for: the backend caps every acquisition by the
// limit learned on its key when it keeps learned limits.
func (p *pipeline) granted(cl *call, slot apiSlot, leases []throttle.Lease) apiSlot {
	if slot.limit == 0 {
		return slot
	}
	key := p.apiKey(cl.path)
	for _, l := range leases {
		if l.Key == key && l.Concurrency > 0 {
			slot.limit = l.Concurrency
		}
	}
	return slot
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

// LimitChange is a change of the calls-in-flight limit the client applies
// to an API, learned from WeCom (see WithAdaptiveLimits).
type LimitChange struct {
	// Path is the API's path.
	Path string
	// From and To are the limits before and after.
	From, To int
	// Configured is the limit the client was configured with: the learned
	// one never exceeds it.
	Configured int
	// Refused: WeCom answered 45033 to a call granted under From slots.
	// Otherwise the limit rose after a quiet period, or another client
	// sharing the limiter backend changed it.
	Refused bool
}

// limitChange is ch, a change of the limit learned for path, as the
// observer is told of it.
func limitChange(path string, configured int, ch *throttle.Change) LimitChange {
	return LimitChange{Path: path, From: ch.From, To: ch.To, Configured: configured, Refused: ch.Refused}
}

// logMessage is the log line of a LimitChange.
const logMessage = "wecom: calls-in-flight limit learned from WeCom"

// attrs are the attributes of c's log line.
func (c LimitChange) attrs() []slog.Attr {
	return []slog.Attr{slog.String("path", c.Path), slog.Int("from", c.From), slog.Int("to", c.To), slog.Bool("refused", c.Refused)}
}
