// The retry policy of a Client: how many retries, how long between them,
// and which failures are worth repeating.

package wecom

import (
	"errors"
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
