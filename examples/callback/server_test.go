package main

import (
	"net/http"
	"testing"

	"github.com/wecomkit/wecom/callback"
)

// TestServerTimeouts: every phase of a connection is bounded, and the
// write timeout leaves the handler its deadline and the deduper's margin.
func TestServerTimeouts(t *testing.T) {
	srv := newServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Fatalf("unbounded: read header %v, read %v, idle %v", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout)
	}
	if need := callback.DefaultTimeout + callback.DefaultTimeout/8; srv.WriteTimeout < need {
		t.Fatalf("write timeout %v under the handler's deadline and margin %v", srv.WriteTimeout, need)
	}
}
