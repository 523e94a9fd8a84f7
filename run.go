// The pipeline's loop, and how a pipeline is built. perform resolves a
// call once (resolve.go, keys.go), then sends it down the steps once per
// attempt: take its limits (take.go, acquired in lease.go), attach its
// credential and send it (exchange.go, transport.go), check the answer
// (answer.go), settle its limits (settle.go) and tell the observer
// (observe.go). Between attempts it alone waits, for the backoff and the
// limits, as afterFailure (decide.go) says.

package wecom

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// perform runs a call to completion: attempts, and between them the waits
// that decide and the limits ask for.
func (p *pipeline) perform(ctx context.Context, cl *call) error {
	el, err := p.prepare(cl)
	if err != nil {
		return err
	}
	bo := p.cfg.retry.newBackOff()
	var st retryState
	if cl.dedupe > 0 { // a margin for the clocks of WeCom's servers and the time the first send takes
		cl.dedupeUntil = time.Now().Add(cl.dedupe - cl.dedupe/10)
	}
	var pending []LimitChange // learned before an attempt that did not start
	for n := 1; ; {
		res := p.take(ctx, cl, el, n, pending)
		var (
			d    time.Duration
			what string // what the wait is for, said when it is cut short
		)
		if res.retake { // no attempt: the limits are taken again, after res.wait
			pending, d, what = res.changes, res.wait, "waiting for the next CST day or month after"
		} else {
			if res.err == nil {
				return nil
			}
			deadline, _ := ctx.Deadline()
			var next retryAction
			next, d, st, res.err = p.afterFailure(cl, res.err, res.final, bo, st, deadline, ctx.Err() != nil)
			code := errcodeOf(res.err)
			switch next {
			case retryStop:
				return res.err
			case retryNewCredential:
				p.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "wecom: "+cl.cred.label()+" rejected, fetching a new one", slog.String("path", cl.path), slog.Int("errcode", code))
				cl.cred.invalidate(ctx, res.tok)
			case retryBackoff:
				p.cfg.logger.LogAttrs(ctx, slog.LevelDebug, "wecom: retrying", slog.String("path", cl.path), slog.Int("attempt", n), slog.Int("errcode", code), slog.Duration("backoff", d))
			}
			pending, n, what = nil, n+1, "while backing off after"
		}
		if d <= 0 {
			continue
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wecom: %s: %w (%s: %w)", cl.path, ctx.Err(), what, res.err)
		}
	}
}

// newPipeline builds the pipeline of cfg: its credentials (a robot's key,
// a suite's token, a provider's, or the corp's token and tickets), its
// limits and its learner.
func newPipeline(cfg *config) (*pipeline, error) {
	p := &pipeline{cfg: cfg, creds: make(map[catalog.Token]carried), learner: newLearner(cfg), stalls: stallLog{logger: cfg.logger, observer: cfg.stallObserver}}
	switch {
	case cfg.robotKey != "": // the corp's options do nothing here
		p.creds[catalog.RobotKey] = givenKey{name: "robot key", param: catalog.RobotKey.String(), value: cfg.robotKey}
	case cfg.suite != nil:
		p.creds[catalog.SuiteToken] = p.suiteCredential()
	case cfg.provider != nil:
		p.creds[catalog.ProviderToken] = p.providerCredential()
	default:
		p.creds[catalog.CorpToken] = p.corpCredential()
		p.tickets = tickets{jsapi: p.ticket("jsapi ticket", catalog.JSAPITicket, nil, "jsapi"),
			agent: p.ticket("agent ticket", catalog.AgentTicket, url.Values{"type": {"agent_config"}}, "agent")}
	}
	p.app = p.appID()
	t := cfg.table
	if t == nil {
		var err error
		if t, err = newLimitTable(cfg); err != nil {
			return nil, err
		}
	}
	p.endpoints, p.generic = t.endpoints, t.generic
	return p, nil
}
