package wecom_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
)

const (
	// e2eSecret has the 43 characters of a real secret; e2eSlashSecret has
	// the characters URL and JSON escaping change.
	e2eSecret      = "Zx8Qw3Ty7Ui2Op5As9Df1Gh4Jk6Lz0Xc3Vb7Nm2Qw8E"
	e2eSlashSecret = "Kx9/aQ+zW3=pL0vB7mN2cR5tY8uI1oE4hG6jD0sA2fX"
	e2eToken       = "Pq7Rs2Tu9Vw4Xy1Za6Bc3De8Fg5Hi0Jk7Lm2No9Pq4Rs1Tu6Vw3Xy8Za5Bc0De7Fg_-Hi"
)

// errResponse marks a case that must end in a *wecom.ResponseError.
var errResponse = errors.New("a *ResponseError")

// echo answers errcode with errmsg holding words, the full request URL, its
// credentials decoded, and the body, as a proxy or a debugging server might.
func echo(w http.ResponseWriter, r *http.Request, code int) {
	body, _ := io.ReadAll(r.Body)
	q := r.URL.Query()
	msg := fmt.Sprintf("echo words: request http://%s%s body %s; secret %s token %s",
		r.Host, r.URL.RequestURI(), body, q.Get("corpsecret"), q.Get("access_token"))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"errcode": code, "errmsg": msg})
}

// e2eClient returns a client of secret against base, with its log and every
// error its observer saw.
func e2eClient(t *testing.T, secret, base string) (*wecom.Client, *wecom.SyncBuffer, func() []string) {
	t.Helper()
	logs := &wecom.SyncBuffer{}
	var mu sync.Mutex
	var seen []string
	c, err := wecom.New("ww1", secret,
		wecom.WithBaseURL(base),
		wecom.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		wecom.WithRetryPolicy(wecom.RetryPolicy{MaxRetries: wecom.NoRetries, MaxConcurrencyRetries: wecom.NoRetries}),
		wecom.WithObserver(func(_ context.Context, a wecom.Attempt) {
			if a.Err != nil {
				mu.Lock()
				seen = append(seen, a.Err.Error())
				mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c, logs, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// Echoed credentials reach neither the returned error, nor the log, nor the
// observer; the other words of errmsg do.
func TestEchoedCredentialsRedacted(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		secret  string
		handler func(w http.ResponseWriter, r *http.Request)
		want    error
	}{
		{"gettoken echoes", e2eSecret, func(w http.ResponseWriter, r *http.Request) {
			echo(w, r, wecom.CodeInvalidSecret)
		}, wecom.ErrBadCredentials},
		{"gettoken echoes an escaped secret", e2eSlashSecret, func(w http.ResponseWriter, r *http.Request) {
			echo(w, r, wecom.CodeInvalidSecret)
		}, wecom.ErrBadCredentials},
		{"API call echoes", e2eSlashSecret, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/cgi-bin/gettoken" {
				fmt.Fprintf(w, `{"errcode":0,"errmsg":"ok","access_token":%q,"expires_in":7200}`, e2eToken)
				return
			}
			echo(w, r, wecom.CodeNoPrivilege)
		}, nil},
		{"proxy answers 502 with the request", e2eSecret, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "bad gateway for %s", r.URL.RequestURI())
		}, errResponse},
		{"proxy answers 200 with the request", e2eSecret, func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]string{"message": "blocked " + r.URL.RequestURI()})
		}, errResponse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(tc.handler))
			t.Cleanup(srv.Close)
			c, logs, seen := e2eClient(t, tc.secret, srv.URL)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.Tags.Create(ctx, wecom.TagCreateRequest{Name: "redact"})
			texts := append([]string{err.Error(), logs.String()}, seen()...)
			var ae *wecom.APIError
			var re *wecom.ResponseError
			switch {
			case tc.want == errResponse:
				if !errors.As(err, &re) {
					t.Fatalf("err = %v, want a *ResponseError", err)
				}
			case !errors.As(err, &ae) || (tc.want != nil && !errors.Is(err, tc.want)):
				t.Fatalf("err = %v, want an *APIError matching %v", err, tc.want)
			case !strings.Contains(ae.Message, "echo words: request http://") || !strings.Contains(err.Error(), `body {"tagname":"redact"}`) && tc.want == nil:
				t.Errorf("errmsg lost its words: %q", ae.Message)
			default:
				texts = append(texts, ae.Message)
			}
			for _, s := range texts {
				for _, v := range []string{tc.secret, url.QueryEscape(tc.secret), e2eToken} {
					if strings.Contains(s, v) {
						t.Errorf("%q holds %q", s, v)
					}
				}
			}
		})
	}
}

// A refused dial with a one-character secret reads as it should.
func TestRefusedDialShortSecret(t *testing.T) {
	t.Parallel()
	base := wecom.RefusedURL(t)
	c, logs, _ := e2eClient(t, "s", base)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Tags.Create(ctx, wecom.TagCreateRequest{Name: "x"})
	if err == nil {
		t.Fatal("no error from a closed port")
	}
	for _, s := range []string{err.Error(), logs.String()} {
		if !strings.Contains(s, "connection refused") || !strings.Contains(s, base+"/cgi-bin/gettoken") || strings.Contains(s, "corpsecret=s") {
			t.Errorf("mangled or leaking: %s", s)
		}
	}
}
