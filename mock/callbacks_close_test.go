package mock_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wecomkit/wecom/mock"
)

// TestNoGoroutineAfterClose: no goroutine of the pushes outlives
// Server.Close, the idle keep-alive connections to the receiver included
// (the Server pushes on a transport of its own, closed with it).
func TestNoGoroutineAfterClose(t *testing.T) {
	h, _ := receiver(t)
	hs := httptest.NewServer(h) // the receiver outlives the mock, as a long-lived one does
	defer hs.Close()
	srv, err := mock.New(mock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.SetCallback(corpID, mock.CallbackConfig{URL: hs.URL, Token: cbToken, EncodingAESKey: cbKey, RetryDelays: fastDelays}); err != nil {
		t.Fatal(err)
	}
	srv.AddExternalContact(corpID, "zhangsan", mock.Customer{ExternalUserID: "wmX", Name: "X", Type: 1}, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitCallbacks(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	time.Sleep(100 * time.Millisecond)
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if n := strings.Count(stacks, "net/http.(*persistConn)"); n > 0 {
		t.Fatalf("%d persistConn goroutines of the mock's pushes alive after Close", n)
	}
	_ = http.DefaultTransport
}
