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

// The corp, secret and base URL of the clients of setup.
const (
	testCorp   = "wwcorp"
	testSecret = "app-secret"
	testBase   = "https://wecom.test"
)

// newMock returns a new embedded mock configured by cfg, holding the app of
// testCorp and testSecret and the members users.
func newMock(t testing.TB, cfg mock.Config, users ...string) *mock.Server {
	t.Helper()
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.AddApp(testCorp, testSecret)
	if len(users) > 0 {
		srv.AddUsers(testCorp, users...)
	}
	return srv
}

// setup returns a client of testCorp's app with opts, drained when the test
// ends. At testBase it reaches a new mock of newMock's through httpmock;
// any other base URL (wecom.WithBaseURL: a started mock, a test's own
// server) over the network, as a client does by default. A test points it
// at a mock of its own with on(srv), or at answers of its own with
// wecom.WithTransport.
func setup(t testing.TB, opts ...wecom.Option) *wecom.Client {
	t.Helper()
	rt := newRouteTransport(t, newMock(t, mock.Config{}))
	c, err := wecom.New(testCorp, testSecret, append([]wecom.Option{wecom.WithBaseURL(testBase), wecom.WithTransport(rt)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Drain(ctx)
	})
	return c
}

// setupRobot is setup for a group robot of key: at testBase it reaches a
// new mock of newMock's that holds the robot.
func setupRobot(t testing.TB, key string, opts ...wecom.Option) *wecom.Robot {
	t.Helper()
	srv := newMock(t, mock.Config{})
	srv.AddRobot(key)
	rt := newRouteTransport(t, srv)
	r, err := wecom.NewRobot(key, append([]wecom.Option{wecom.WithBaseURL(testBase), wecom.WithTransport(rt)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = r.Drain(ctx)
	})
	return r
}

// on points a client at srv, served through httpmock at testBase.
func on(srv *mock.Server) wecom.Option { return wecom.WithTransport(srvTransport(srv)) }

// srvTransport is an httpmock transport serving srv at testBase.
func srvTransport(srv *mock.Server) *httpmock.MockTransport {
	mt := httpmock.NewMockTransport()
	srv.Register(mt, testBase)
	return mt
}

// started serves srv over HTTP until the test ends, and returns its URL.
func started(t testing.TB, srv *mock.Server) string {
	t.Helper()
	hs := srv.Start()
	t.Cleanup(hs.Close)
	return hs.URL
}

// newRouteTransport returns a transport to srv at testBase, and to the
// network elsewhere as a client's default transport (more idle connections
// per host than http.DefaultTransport's).
func newRouteTransport(t testing.TB, srv *mock.Server) routeTransport {
	network := http.DefaultTransport
	if dt, ok := network.(*http.Transport); ok {
		tr := dt.Clone()
		tr.MaxIdleConnsPerHost = 64
		t.Cleanup(tr.CloseIdleConnections)
		network = tr
	}
	return routeTransport{base: testBase, mock: srvTransport(srv), network: network}
}

// routeTransport sends the requests for base to mock, and the others to
// network.
type routeTransport struct {
	base          string
	mock, network http.RoundTripper
}

func (rt routeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme+"://"+r.URL.Host == rt.base {
		return rt.mock.RoundTrip(r)
	}
	return rt.network.RoundTrip(r)
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
