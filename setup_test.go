package wecom

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom/catalog"
)

// Test credentials. testSecret and the tokens the fake gettoken hands out must
// never appear in an error or a log line; see checkNoSecrets.
const (
	testCorp    = "wwcorp"
	testSecret  = "S3CR3T-never-printed"
	testBaseURL = "https://wecom.test"
	testToken   = "TOKEN-must-not-leak-1"
)

// fixture is a client wired to an httpmock transport.
type fixture struct {
	c         *Client
	mt        *httpmock.MockTransport
	logs      *syncBuffer
	tokenHits atomic.Int64
	mu        sync.Mutex
	errs      []error // every error seen by the observer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// setup returns a client whose gettoken answers testToken, a debug logger and
// an observer that keep everything for checkNoSecrets, and fast retries.
func setup(t *testing.T, opts ...Option) *fixture {
	t.Helper()
	f := &fixture{mt: httpmock.NewMockTransport(), logs: &syncBuffer{}}
	f.mt.RegisterResponder("GET", testBaseURL+catalog.GetToken.Path(), func(r *http.Request) (*http.Response, error) {
		f.tokenHits.Add(1)
		if r.URL.Query().Get("corpsecret") != testSecret || r.URL.Query().Get("corpid") != testCorp {
			return httpmock.NewStringResponse(200, `{"errcode":40001,"errmsg":"invalid secret"}`), nil
		}
		return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","access_token":"`+testToken+`","expires_in":7200}`), nil
	})
	base := []Option{
		WithBaseURL(testBaseURL),
		WithTransport(f.mt),
		WithLogger(slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		WithRetryPolicy(RetryPolicy{MaxRetries: 3, MaxConcurrencyRetries: 5, InitialInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond}),
		WithObserver(func(_ context.Context, a Attempt) {
			if a.Err != nil {
				f.mu.Lock()
				f.errs = append(f.errs, a.Err)
				f.mu.Unlock()
			}
		}),
	}
	c, err := New(testCorp, testSecret, append(base, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.c = c
	t.Cleanup(func() { f.checkNoSecrets(t) })
	return f
}

// record keeps an error returned to the test for checkNoSecrets.
func (f *fixture) record(err error) error {
	if err != nil {
		f.mu.Lock()
		f.errs = append(f.errs, err)
		f.mu.Unlock()
	}
	return err
}

// checkNoSecrets greps every log line and every error of the test for the
// secret and the tokens.
func (f *fixture) checkNoSecrets(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	texts := []string{f.logs.String()}
	for _, e := range f.errs {
		texts = append(texts, e.Error())
	}
	for _, text := range texts {
		for _, secret := range []string{testSecret, "TOKEN-"} {
			if strings.Contains(text, secret) {
				t.Errorf("a secret or token leaked into %q", text)
			}
		}
	}
}

// respond registers a fixed JSON answer for method and path.
func (f *fixture) respond(method, path, body string) {
	f.mt.RegisterResponder(method, testBaseURL+path, httpmock.NewStringResponder(200, body))
}

// calls returns how many requests reached method and path.
func (f *fixture) calls(method, path string) int {
	return f.mt.GetCallCountInfo()[method+" "+testBaseURL+path]
}

// decodeJSON decodes a request's JSON body.
func decodeJSON(r *http.Request, v any) error { return json.NewDecoder(r.Body).Decode(v) }

// gauge counts the calls in flight under each key and keeps each key's peak.
type gauge struct {
	mu         sync.Mutex
	now, peaks map[string]int
}

func newGauge() *gauge { return &gauge{now: map[string]int{}, peaks: map[string]int{}} }

// enter counts one call in flight under every key until leave is called.
func (g *gauge) enter(keys ...string) (leave func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range keys {
		g.now[k]++
		g.peaks[k] = max(g.peaks[k], g.now[k])
	}
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, k := range keys {
			g.now[k]--
		}
	}
}

// peak is the most calls ever in flight under key.
func (g *gauge) peak(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peaks[key]
}

// maxPeak is the highest peak of any key.
func (g *gauge) maxPeak() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := 0
	for _, p := range g.peaks {
		m = max(m, p)
	}
	return m
}

// refusedURL returns the URL of a loopback port nobody listens on.
func refusedURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}
