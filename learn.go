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

// newLearner returns the learner cfg asks for.
func newLearner(cfg *config) learner {
	if cfg.adaptive.off {
		return notLearning{}
	}
	store, ok := cfg.limiter.(throttle.LimitStore)
	if !ok {
		store = throttle.NewMemory()
	}
	return throttle.NewLearner(store, cfg.adaptive.aimd, 0)
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
