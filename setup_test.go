package wecom

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
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
	"github.com/wecomkit/wecom/mock"
)

// Test credentials. testSecret and the tokens the mock hands out must never
// appear in an error or a log line; see checkNoSecrets.
const (
	testCorp    = "wwcorp"
	testSecret  = "S3CR3T-never-printed"
	testBaseURL = "https://wecom.test"
	// testToken is a token value for the redaction tests.
	testToken = "TOKEN-must-not-leak-1"
)

// fixture is a client against the embedded mock, reached through an
// httpmock transport on which a test may register answers of its own.
type fixture struct {
	c         *Client
	srv       *mock.Server
	mt        *httpmock.MockTransport
	logs      *syncBuffer
	tokenHits atomic.Int64
	mu        sync.Mutex
	tokens    []string // every token gettoken handed out
	errs      []error  // every error seen by the observer
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

// setup returns a client of testCorp's app against a new embedded mock
// (served at testBaseURL through httpmock), with a debug logger and an
// observer that keep everything for checkNoSecrets, and fast retries. opts
// come after those: WithTransport or WithBaseURL point the client
// elsewhere. The mock answers every API a test does not answer itself with
// f.respond or f.mt; f.tokenHits counts its gettoken calls.
func setup(t testing.TB, opts ...Option) *fixture {
	t.Helper()
	srv, err := mock.New(mock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv.AddApp(testCorp, testSecret)
	f := &fixture{srv: srv, mt: httpmock.NewMockTransport(), logs: &syncBuffer{}}
	srv.Register(f.mt, testBaseURL)
	gettoken := srv.Responder()
	f.mt.RegisterResponder("GET", testBaseURL+catalog.GetToken.Path(), func(r *http.Request) (*http.Response, error) {
		f.tokenHits.Add(1)
		resp, err := gettoken(r)
		if err != nil {
			return resp, err
		}
		body, err := io.ReadAll(resp.Body)
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		if err == nil && json.Unmarshal(body, &tok) == nil && tok.AccessToken != "" {
			f.mu.Lock()
			f.tokens = append(f.tokens, tok.AccessToken)
			f.mu.Unlock()
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, err
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

// token returns the last token gettoken handed out.
func (f *fixture) token() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.tokens) == 0 {
		return ""
	}
	return f.tokens[len(f.tokens)-1]
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
func (f *fixture) checkNoSecrets(t testing.TB) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	texts := []string{f.logs.String()}
	for _, e := range f.errs {
		texts = append(texts, e.Error())
	}
	for _, text := range texts {
		for _, secret := range append([]string{testSecret, "TOKEN-"}, f.tokens...) {
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
