// The pipeline: one call goes down it once per attempt. run owns the one
// loop of retries and waits; attempt takes the call's limits (take.go),
// then its credential (credential.go), sends it and reads the answer
// (exchange.go, transport.go, answer.go), settles its limits (settle.go)
// and tells the observer (observe.go); decide (retry.go) says what comes
// next. What a call is, and what its endpoint asks of it, is resolved
// once before the loop (resolve.go, keys.go).

package wecom

import (
	"context"
	"fmt"
	"log/slog"
	"time"
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
		res := p.attempt(ctx, cl, el, n, pending)
		var (
			d    time.Duration
			what string // what the wait is for, said when it is cut short
		)
		if res.retake { // no attempt: the limits are taken again, after res.wait
			pending, d, what = res.changes, res.wait, "waiting for the next CST day after"
		} else {
			if res.err == nil {
				return nil
			}
			deadline, _ := ctx.Deadline()
			var next retryAction
			next, d, st, res.err = p.afterFailure(cl, res, bo, st, deadline, ctx.Err() != nil)
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

// tried is what an attempt hands the loop.
type tried struct {
	err error
	// tok is the credential's value the attempt sent.
	tok string
	// final: the error ends the call (no credential could be had, the
	// fetch having made its own retries; a duplicate check run out).
	final bool
	// retake: no attempt was made; the limits are to be taken again after
	// wait, and changes reported with the attempt that starts.
	retake  bool
	wait    time.Duration
	changes []LimitChange
}

// attempt sends the call once: it takes the call's limits, then the
// credential (a token replaced while the call waited for a slot is not
// sent), and hands both to exchange, which sends unless something failed
// already, settles the limits and observes the attempt.
func (p *pipeline) attempt(ctx context.Context, cl *call, el *endpointLimits, n int, pending []LimitChange) tried {
	start := time.Now()
	t := p.take(ctx, cl, el)
	t.changes = append(pending, t.changes...)
	if t.retake {
		return tried{retake: true, wait: t.wait, changes: t.changes, err: t.err}
	}
	a := Attempt{Method: cl.method, Path: cl.path, Number: n, LeaseWait: time.Since(start), LimitChanges: t.changes, Uncounted: cl.uncounted}
	res := tried{err: t.err}
	if res.err == nil && cl.counted && !time.Now().Before(cl.dedupeUntil) {
		// The wait outlasted WeCom's duplicate check: a copy sent now
		// would be delivered again.
		res.err, res.final = fmt.Errorf("wecom: %s: not repeated: WeCom's duplicate check no longer covers it (%w)", cl.path, ErrMaybeDone), true
	}
	if res.err == nil && cl.cred != nil {
		res.tok, res.err = cl.cred.token(ctx)
		res.final = res.err != nil
	}
	if res.err == nil && ctx.Err() != nil { // the caller left before anything was sent
		res.err = fmt.Errorf("wecom: %s: %w", cl.path, ctx.Err())
	}
	res.err = p.exchange(ctx, cl, el, t, res.tok, res.err, a)
	return res
}
