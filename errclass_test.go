package wecom_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
)

// Errors a service serving several corps can act on: whose call failed, each
// thing said once, and a transport failure told apart from an answer and an
// attempt timeout from the caller's own deadline.
func TestErrorsSayWhoAndWhatOnce(t *testing.T) {
	t.Parallel()
	base := fakeWeCom(t, map[string]string{
		"/cgi-bin/tag/list": `{"errcode":45009,"errmsg":"api freq out of limit"}`,
		"/cgi-bin/tag/get":  `{"errcode":60011,"errmsg":"no privilege to access/modify contact/party/agent"}`,
	})
	refused := wecom.RefusedURL(t)
	// attempt: the attempt timeout, short only where the test wants one
	// (a loaded machine may take longer than that to answer at all). The
	// clients share a token store, which the first one fills: a short
	// attempt timeout then bounds only the call, not a token fetch before
	// it.
	tokens := wecom.NewMemoryTokenStore()
	newClient := func(base string, attempt time.Duration) *wecom.Client {
		c, err := wecom.New("wwcorpA", "secret-A-0123456789", wecom.WithBaseURL(base), wecom.WithAgentID(1000002),
			wecom.WithAttemptTimeout(attempt), wecom.WithAbandonedHold(100*time.Millisecond), wecom.WithTokenStore(tokens),
			wecom.WithRetryPolicy(wecom.RetryPolicy{MaxRetries: wecom.NoRetries}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := newClient(base, 30*time.Second)
	ctx := context.Background()

	_, err := c.Tags.Members(ctx, 1)
	var ae *wecom.APIError
	if !errors.As(err, &ae) || ae.CorpID != "wwcorpA" || ae.AgentID != 1000002 {
		t.Fatalf("err = %v, want an *APIError of corp wwcorpA, agent 1000002", err)
	}
	if !strings.Contains(err.Error(), "corp wwcorpA agent 1000002") {
		t.Errorf("%q does not say whose call it was", err)
	}

	_, err = c.Tags.List(ctx)
	if !errors.Is(err, wecom.ErrRateLimited) {
		t.Fatalf("err = %v, want ErrRateLimited", err)
	}
	for _, once := range []string{"/cgi-bin/tag/list", "errcode 45009", "wecom:"} {
		if n := strings.Count(err.Error(), once); n != 1 {
			t.Errorf("%q says %q %d times, want once", err, once, n)
		}
	}

	tests := []struct {
		name              string
		base              string
		attempt           time.Duration
		wantSent, timeout bool
	}{
		// A long attempt timeout where none should fire: on a loaded
		// machine, a refused dial can take longer than 100 ms to report.
		{"refused", refused, 30 * time.Second, false, false},
		{"attempt timeout", base, 500 * time.Millisecond, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newClient(tt.base, tt.attempt).Tags.Create(ctx, wecom.TagCreateRequest{Name: "x"})
			var te *wecom.TransportError
			if !errors.As(err, &te) || !errors.Is(err, wecom.ErrTransport) {
				t.Fatalf("err = %v (%T), want a *TransportError matching ErrTransport", err, err)
			}
			if te.Sent != tt.wantSent || errors.Is(err, wecom.ErrAttemptTimeout) != tt.timeout {
				t.Errorf("Sent %t, ErrAttemptTimeout %t; want %t, %t", te.Sent, errors.Is(err, wecom.ErrAttemptTimeout), tt.wantSent, tt.timeout)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v matches context.DeadlineExceeded, but the caller set no deadline", err)
			}
		})
	}
}
