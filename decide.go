// The loop's decision after a failed attempt: stop, fetch a new
// credential, or try again after a backoff or a cooldown.

package wecom

import (
	"errors"
	"fmt"
	"time"
)

// afterFailure is what a call does after a failed attempt (decide), and how long
// it waits first; the error to return when it stops. cancelled: the
// caller's context has ended; deadline is its deadline (zero: none).
func (p *pipeline) afterFailure(cl *call, err error, final bool, bo interface{ NextBackOff() time.Duration }, st retryState, deadline time.Time, cancelled bool) (retryAction, time.Duration, retryState, error) {
	if !cl.idempotent && errors.Is(err, ErrMaybeDone) {
		// WeCom may have done it: its counts per member and in units
		// stand, and a retry (under the duplicate check, which drops the
		// copy) takes them no more. A repeatable call's retry is a call of
		// its own, counted as one.
		cl.counted = true
	} else if cl.counted {
		err = fmt.Errorf("%w (an earlier attempt may have been done: %w)", err, ErrMaybeDone)
	}
	if final || cancelled {
		return retryStop, 0, st, err
	}
	act, st := p.decide(err, cl, st, time.Now(), deadline)
	switch act {
	case retryStop:
		if !cl.idempotent && retryable(err) && errors.Is(err, ErrMaybeDone) {
			err = fmt.Errorf("%w (not repeated: it is not safe to repeat)", err)
		}
		return retryStop, 0, st, err
	case retryNewCredential, retryAfterCooldown: // at once: the next lease waits out a cooldown
		return act, 0, st, err
	}
	d := bo.NextBackOff()
	if !deadline.IsZero() && deadline.Before(time.Now().Add(d)) {
		return retryStop, 0, st, err
	}
	return act, d, st, err
}

// retryAction is what a call does after a failed attempt.
type retryAction int

const (
	// retryStop: the call returns the attempt's error.
	retryStop retryAction = iota
	// retryNewCredential: the credential the attempt carried is dropped
	// and the call tries again at once, with a new one.
	retryNewCredential
	// retryAfterCooldown: the call tries again at once; its next lease
	// waits out the API's block.
	retryAfterCooldown
	// retryBackoff: the call tries again after a backoff.
	retryBackoff
)

// retryState is what a call has retried so far.
type retryState struct {
	credential bool // a refused credential was replaced once
	busy, conc int  // retries after a transient failure, after 45033
}

// decide is the whole retry decision, without side effects: from the
// attempt's error, the endpoint (cl: whether it is safe to repeat, the
// credential it carries), what the call retried so far and the caller's
// deadline at now (zero: none), what the call does next. A call that is
// not safe to repeat is retried when it cannot have been done (it never
// left), or while WeCom's duplicate check covers it.
func (p *pipeline) decide(err error, cl *call, st retryState, now, deadline time.Time) (retryAction, retryState) {
	code := errcodeOf(err)
	fits := func(d time.Duration) bool { return deadline.IsZero() || !deadline.Before(now.Add(d)) }
	var rl *RateLimitError
	switch {
	case cl.cred != nil && cl.cred.refuses(code) && !st.credential:
		st.credential = true
		return retryNewCredential, st
	case code == CodeFrequencyLimited:
		if errors.As(err, &rl) && p.cfg.waitOnRateLimit && fits(rl.RetryAfter) && st.busy < p.cfg.retry.MaxRetries {
			st.busy++
			return retryAfterCooldown, st
		}
		return retryStop, st
	case code == CodeConcurrencyLimited && st.conc < p.cfg.retry.MaxConcurrencyRetries:
		st.conc++
		return retryBackoff, st
	case retryable(err) && (cl.idempotent || now.Before(cl.dedupeUntil) || neverLeft(err)) && st.busy < p.cfg.retry.MaxRetries:
		st.busy++
		return retryBackoff, st
	}
	return retryStop, st
}
