// The retry policy of a Client: how many retries, how long between them,
// and which failures are worth repeating.

package wecom

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// RetryPolicy bounds the SDK's retries. Retries wait with exponential backoff
// and jitter, and never outlast the caller's context. A field left at zero
// takes its default, so RetryPolicy{MaxRetries: 5} changes only that; a
// count that means "never retry" is spelled NoRetries.
type RetryPolicy struct {
	// MaxRetries bounds retries after -1 (system busy), 6000, HTTP 5xx,
	// malformed answers and transport errors. These retries happen only for
	// calls that are safe to repeat (GETs and idempotent POSTs). Default 3.
	MaxRetries int
	// MaxConcurrencyRetries bounds retries after 45033, which WeCom answers
	// without doing anything, so every call may be retried. Default 10.
	MaxConcurrencyRetries int
	// InitialInterval and MaxInterval shape the backoff. Defaults 200ms and 5s.
	InitialInterval time.Duration
	MaxInterval     time.Duration
}

// NoRetries, as MaxRetries or MaxConcurrencyRetries, means no retry at all.
const NoRetries = -1

// DefaultRetryPolicy returns the policy a Client uses unless told otherwise.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxRetries: 3, MaxConcurrencyRetries: 10, InitialInterval: 200 * time.Millisecond, MaxInterval: 5 * time.Second}
}

// withDefaults fills p's zero fields from DefaultRetryPolicy and turns
// NoRetries into a count of 0.
func (p RetryPolicy) withDefaults() (RetryPolicy, error) {
	d := DefaultRetryPolicy()
	count := func(n, def int) (int, bool) {
		switch {
		case n == 0:
			return def, true
		case n == NoRetries:
			return 0, true
		}
		return n, n > 0
	}
	var ok1, ok2 bool
	p.MaxRetries, ok1 = count(p.MaxRetries, d.MaxRetries)
	p.MaxConcurrencyRetries, ok2 = count(p.MaxConcurrencyRetries, d.MaxConcurrencyRetries)
	if p.InitialInterval == 0 {
		p.InitialInterval = d.InitialInterval
		if p.MaxInterval > 0 {
			p.InitialInterval = min(p.InitialInterval, p.MaxInterval)
		}
	}
	if p.MaxInterval == 0 {
		p.MaxInterval = max(d.MaxInterval, p.InitialInterval)
	}
	if !ok1 || !ok2 || p.InitialInterval < 0 || p.MaxInterval < p.InitialInterval {
		return p, invalid("retry policy", "%+v: counts must be positive, 0 (default) or NoRetries; intervals positive (0: default) and ordered", p)
	}
	return p, nil
}

func (p RetryPolicy) newBackOff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = p.InitialInterval
	b.MaxInterval = p.MaxInterval
	b.RandomizationFactor = 0.5
	b.Multiplier = 2
	b.MaxElapsedTime = 0 // bounded by attempts and ctx instead
	b.Reset()
	return b
}

// retryable reports whether err is a failure worth repeating for a call that is
// safe to repeat: system busy, HTTP 5xx, malformed answers, transport errors.
func retryable(err error) bool {
	if errors.Is(err, ErrSystemBusy) {
		return true
	}
	var re *ResponseError
	if errors.As(err, &re) {
		return re.StatusCode >= 500 || (re.StatusCode == http.StatusOK && !re.shape)
	}
	var ae *APIError
	var le *RateLimitError
	return !errors.As(err, &ae) && !errors.As(err, &le) && !errors.Is(err, ErrInvalidRequest)
}

// afterFailure is what a call does after a failed attempt (decide), and how long
// it waits first; the error to return when it stops. cancelled: the
// caller's context has ended; deadline is its deadline (zero: none).
func (p *pipeline) afterFailure(cl *call, res tried, bo interface{ NextBackOff() time.Duration }, st retryState, deadline time.Time, cancelled bool) (retryAction, time.Duration, retryState, error) {
	err := res.err
	if !cl.idempotent && errors.Is(err, ErrMaybeDone) {
		// WeCom may have done it: its counts per member and in units
		// stand, and a retry (under the duplicate check, which drops the
		// copy) takes them no more. A repeatable call's retry is a call of
		// its own, counted as one.
		cl.counted = true
	} else if cl.counted {
		err = fmt.Errorf("%w (an earlier attempt may have been done: %w)", err, ErrMaybeDone)
	}
	if res.final || cancelled {
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

// neverLeft reports a request known not to have reached WeCom: its
// connection was refused, or it was not written.
func neverLeft(err error) bool {
	var te *TransportError
	return errors.As(err, &te) && !te.Sent
}

// errcodeOf returns the errcode of WeCom's answer in err's chain (0: none).
func errcodeOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return 0
}
