package wecom

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// TestEveryEndpointAgainstTheMock: every typed method, against the strict
// mock answering "system busy" to every call: it reaches its catalog path
// with its catalog method (the mock refuses the other one with 43001/43002),
// and is sent again exactly when the catalog says it is safe to repeat.
func TestEveryEndpointAgainstTheMock(t *testing.T) {
	t.Parallel()
	for _, ep := range failureEndpoints() {
		t.Run(ep.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, WithRetryPolicy(RetryPolicy{MaxRetries: 3, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond}))
			srv := f.srv
			srv.SetFaults(mock.Faults{SystemBusy: 1})
			err := f.record(ep.call(context.Background(), f.c))
			if !errors.Is(err, ErrSystemBusy) {
				t.Fatalf("%s = %v, want ErrSystemBusy (-1 from the mock at %s %s)", ep.name, err, ep.method, ep.path)
			}
			want := 1
			if ep.idempotent {
				want = 4
			}
			st := srv.Stats()
			if got := st.Calls[ep.path]; got != want {
				t.Errorf("%d calls to %s, want %d (repeatable: %t)", got, ep.path, want, ep.idempotent)
			}
			if n := st.Refusals[43001] + st.Refusals[43002]; n != 0 {
				t.Errorf("%d calls with the wrong method", n)
			}
			if e, _ := catalog.Lookup(ep.path); e.Method != ep.method {
				t.Errorf("method %s, catalog %s", ep.method, e.Method)
			}
		})
	}
}
