package wecom_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// The corp, secret and base URL of the clients of mockClient and
// transportClient.
const (
	testCorp   = "wwcorp"
	testSecret = "app-secret"
	testBase   = "https://wecom.test"
)

// transportClient returns a client of testCorp at testBase sending through
// rt (an httpmock transport, say), drained at the test's end.
func transportClient(t *testing.T, rt http.RoundTripper, opts ...wecom.Option) *wecom.Client {
	t.Helper()
	c, err := wecom.New(testCorp, testSecret, append([]wecom.Option{wecom.WithBaseURL(testBase), wecom.WithTransport(rt)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Drain(context.Background()) })
	return c
}

// mockClient returns a new mock server configured by cfg, holding the app
// of testCorp, and a client of that app talking to it through httpmock.
func mockClient(t *testing.T, cfg mock.Config, opts ...wecom.Option) (*wecom.Client, *mock.Server) {
	t.Helper()
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.AddApp(testCorp, testSecret)
	mt := httpmock.NewMockTransport()
	srv.Register(mt, testBase)
	return transportClient(t, mt, opts...), srv
}

// tokenTransport returns an httpmock transport whose gettoken at testBase
// answers the token "TOKEN", for tests that answer the API themselves.
func tokenTransport() *httpmock.MockTransport {
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder(http.MethodGet, testBase+catalog.GetToken.Path(),
		httpmock.NewStringResponder(http.StatusOK, `{"errcode":0,"errmsg":"ok","access_token":"TOKEN","expires_in":7200}`))
	return mt
}

// fastRetries makes retries wait a millisecond or two.
func fastRetries() wecom.Option {
	return wecom.WithRetryPolicy(wecom.RetryPolicy{InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond})
}
