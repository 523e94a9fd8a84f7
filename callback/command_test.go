package callback_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// TestCommandCallbackDeadline: a suite's command callback is answered
// "success" within WeCom's 1000 ms even when its handler overruns: at
// DefaultCommandTimeout, or the one set, while an app's callback keeps
// the longer timeout.
func TestCommandCallbackDeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []callback.Option
		want time.Duration
	}{
		{"default", nil, callback.DefaultCommandTimeout},
		{"set", []callback.Option{callback.WithCommandTimeout(500 * time.Millisecond)}, 500 * time.Millisecond},
		{"timeout shorter", []callback.Option{callback.WithTimeout(300 * time.Millisecond)}, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				c, _ := callback.NewCrypto(testToken, testKey, "ww4asffe99e54c0fxxxx")
				h, err := callback.NewHandler(c, tc.opts...)
				if err != nil {
					t.Fatal(err)
				}
				slow := func(ctx context.Context) error { <-ctx.Done(); time.Sleep(time.Second); return nil }
				callback.Handle(h, func(ctx context.Context, _ *callback.SuiteTicketEvent) error { return slow(ctx) })
				callback.Handle(h, func(ctx context.Context, _ *callback.TextMessage) error { return slow(ctx) })
				start := time.Now()
				rec := serve(h, seal(t, c, documentedSuiteTicket, start.Unix()))
				if took := time.Since(start); rec.Code != http.StatusOK || rec.Body.String() != "success" || took != tc.want {
					t.Fatalf("suite_ticket answered %d %q after %v, want success at %v", rec.Code, rec.Body.String(), took, tc.want)
				}
				start = time.Now()
				serve(h, seal(t, c, textXML("1", "x"), start.Unix()))
				if took, want := time.Since(start), max(tc.want, callback.DefaultTimeout); tc.name != "timeout shorter" && took != want {
					t.Fatalf("app message answered after %v, want %v", took, want)
				}
				if err := h.Close(t.Context()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
	if _, err := callback.NewHandler(docCrypto(t), callback.WithCommandTimeout(0)); !errors.Is(err, callback.ErrConfig) {
		t.Fatalf("zero command timeout: %v", err)
	}
}
