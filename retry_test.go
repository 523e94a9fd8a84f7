package wecom

import (
	"errors"
	"testing"
	"time"
)

// TestRetryDecision: the retry decision is a function of the error, the
// endpoint, the retries made and the deadline alone.
func TestRetryDecision(t *testing.T) {
	t.Parallel()
	c := setup(t, WithRetryPolicy(RetryPolicy{MaxRetries: 2, MaxConcurrencyRetries: 3}), WithWaitOnRateLimit(true)).c
	now := time.Unix(1_790_000_000, 0)
	api := func(code int) error { return &APIError{Code: code, Path: "/p"} }
	block := &RateLimitError{Path: "/p", RetryAfter: time.Minute, Err: api(CodeFrequencyLimited)}
	repeatable := &call{path: "/p", idempotent: true, cred: c.p.corp()}
	once := &call{path: "/p", cred: c.p.corp()}
	for _, tc := range []struct {
		name     string
		err      error
		cl       *call
		st       retryState
		deadline time.Time
		want     retryAction
	}{
		{"a refused token, once", api(CodeInvalidAccessToken), once, retryState{}, time.Time{}, retryNewCredential},
		{"a refused token, twice", api(CodeInvalidAccessToken), once, retryState{credential: true}, time.Time{}, retryStop},
		{"a suite token code on a corp token call", api(CodeInvalidSuiteToken), once, retryState{}, time.Time{}, retryStop},
		{"45009, waiting allowed", block, once, retryState{}, time.Time{}, retryAfterCooldown},
		{"45009, the deadline before the block ends", block, once, retryState{}, now.Add(time.Second), retryStop},
		{"45009, retries spent", block, once, retryState{busy: 2}, time.Time{}, retryStop},
		{"45033 on a call not safe to repeat", api(CodeConcurrencyLimited), once, retryState{conc: 2}, time.Time{}, retryBackoff},
		{"45033, retries spent", api(CodeConcurrencyLimited), once, retryState{conc: 3}, time.Time{}, retryStop},
		{"system busy, repeatable", api(CodeSystemBusy), repeatable, retryState{}, time.Time{}, retryBackoff},
		{"system busy, not repeatable", api(CodeSystemBusy), once, retryState{}, time.Time{}, retryStop},
		{"a transport error, repeatable", &TransportError{Path: "/p", Err: errors.New("reset")}, repeatable, retryState{busy: 1}, time.Time{}, retryBackoff},
		{"an answer the caller must fix", api(CodeInvalidTagID), repeatable, retryState{}, time.Time{}, retryStop},
	} {
		got, st := c.p.decide(tc.err, tc.cl, tc.st, now, tc.deadline)
		if got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
		if got == retryStop && st != tc.st {
			t.Errorf("%s: stopping changed the state %+v to %+v", tc.name, tc.st, st)
		}
	}
}
