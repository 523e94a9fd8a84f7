package wecom

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// A gettoken success must carry a token and a positive lifetime; anything
// else is a malformed answer, retried as gettoken is safe to repeat.
func TestGetTokenAnswerMustCarryToken(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"errcode":0,"errmsg":"ok","access_token":"","expires_in":7200}`,
		`{"errcode":0,"errmsg":"ok","access_token":"TOKEN-1","expires_in":0}`,
		`{"errcode":0,"errmsg":"ok","expires_in":7200}`,
		`{"access_token":"TOKEN-1","expires_in":7200}`,
		`{"message":"blocked"}`,
		`null`,
	} {
		t.Run(body, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.respond("GET", catalog.GetToken.Path(), body)
			f.respond("GET", catalog.TagList.Path(), `{"errcode":0,"errmsg":"ok","taglist":[]}`)
			_, err := f.c.Tags.List(context.Background())
			f.record(err)
			var re *ResponseError
			if !errors.As(err, &re) || re.Path != catalog.GetToken.Path() {
				t.Fatalf("err = %v, want a *ResponseError of gettoken", err)
			}
			if n := f.calls("GET", catalog.GetToken.Path()); n != 4 {
				t.Errorf("%d gettoken calls, want 4 (one and 3 retries)", n)
			}
			if n := f.calls("GET", catalog.TagList.Path()); n != 0 {
				t.Errorf("%d API calls without a token, want 0", n)
			}
		})
	}
}

// Do is strict too: an answer without errcode is not a success (the APIs
// where WeCom leaves errcode out of a success, get_corp_token's, are
// tested in suite_auth_test.go).
func TestDoStrictAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path, body string
		wantErr    bool
	}{
		{"/cgi-bin/user/simplelist", `{"userlist":[]}`, true},
		{"/cgi-bin/user/simplelist", `null`, true},
		{"/cgi-bin/user/simplelist", `{"errcode":0,"errmsg":"ok","userlist":[]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.body, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.respond(http.MethodGet, tt.path, tt.body)
			var out map[string]any
			err := f.c.Do(context.Background(), http.MethodGet, tt.path, nil, nil, &out)
			f.record(err)
			var re *ResponseError
			if got := errors.As(err, &re); got != tt.wantErr {
				t.Errorf("err = %v, want a *ResponseError: %t", err, tt.wantErr)
			}
		})
	}
}

// A retry policy's zero fields take their defaults; NoRetries is "none".
func TestRetryPolicyDefaults(t *testing.T) {
	t.Parallel()
	d := DefaultRetryPolicy()
	tests := []struct {
		in      RetryPolicy
		want    RetryPolicy
		wantErr bool
	}{
		{RetryPolicy{}, d, false},
		{RetryPolicy{MaxRetries: 5}, RetryPolicy{MaxRetries: 5, MaxConcurrencyRetries: 10, InitialInterval: 200 * time.Millisecond, MaxInterval: 5 * time.Second}, false},
		{RetryPolicy{MaxRetries: NoRetries, MaxConcurrencyRetries: NoRetries}, RetryPolicy{InitialInterval: 200 * time.Millisecond, MaxInterval: 5 * time.Second}, false},
		{RetryPolicy{MaxInterval: 50 * time.Millisecond}, RetryPolicy{MaxRetries: 3, MaxConcurrencyRetries: 10, InitialInterval: 50 * time.Millisecond, MaxInterval: 50 * time.Millisecond}, false},
		{RetryPolicy{InitialInterval: 10 * time.Second}, RetryPolicy{MaxRetries: 3, MaxConcurrencyRetries: 10, InitialInterval: 10 * time.Second, MaxInterval: 10 * time.Second}, false},
		{RetryPolicy{MaxRetries: -2}, RetryPolicy{}, true},
		{RetryPolicy{InitialInterval: -time.Second}, RetryPolicy{}, true},
		{RetryPolicy{InitialInterval: time.Second, MaxInterval: time.Millisecond}, RetryPolicy{}, true},
	}
	for _, tt := range tests {
		c, err := New(testCorp, testSecret, WithRetryPolicy(tt.in))
		if (err != nil) != tt.wantErr {
			t.Errorf("WithRetryPolicy(%+v): err %v, want error %t", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && c.p.cfg.retry != tt.want {
			t.Errorf("WithRetryPolicy(%+v) = %+v, want %+v", tt.in, c.p.cfg.retry, tt.want)
		}
	}
}
