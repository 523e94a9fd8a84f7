package wecom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
)

const (
	// A secret with the characters that URL and JSON escaping change.
	longSecret = "Kx9/aQ+zW3=pL0vB7mN2cR5tY8uI1oE4hG6jD0sA2fX"
	longToken  = "tok_6rY2-Jk8QwErTyUiOpAsDfGhJkLzXcVbNm1234567890abcdefGHIJKLmnopq"
)

func TestRedactText(t *testing.T) {
	t.Parallel()
	qs, qt := url.QueryEscape(longSecret), url.QueryEscape(longToken)
	cases := []struct {
		name   string
		values []string
		in     string
		want   string
	}{
		{"short secret leaves ordinary words alone", []string{"s"},
			`Get "https://127.0.0.1:1/cgi-bin/gettoken?corpid=c&corpsecret=s": dial tcp 127.0.0.1:1: connect: connection refused`,
			`Get "https://127.0.0.1:1/cgi-bin/gettoken?corpid=c&corpsecret=REDACTED": dial tcp 127.0.0.1:1: connect: connection refused`},
		{"short secret standing alone is not replaced by value", []string{"s"},
			`it's s, the secret s`, `it's s, the secret s`},
		{"below the minimum length: structure only", []string{"abcdefg"},
			`abcdefg and secret: abcdefg`, `abcdefg and secret: REDACTED`},
		{"at the minimum length: by value", []string{"abcdefgh"},
			`abcdefgh and x abcdefgh.`, `REDACTED and x REDACTED.`},
		{"long value inside a longer word is not a whole token", []string{"abcdefgh"},
			`xabcdefgh abcdefghx abcdefgh_1`, `xabcdefgh abcdefghx abcdefgh_1`},
		{"echo in errmsg", []string{longSecret, longToken},
			"invalid credential, hint: [" + longToken + "], you sent " + longSecret + " from ip 1.2.3.4",
			"invalid credential, hint: [REDACTED], you sent REDACTED from ip 1.2.3.4"},
		{"query", []string{longSecret, longToken},
			"GET /cgi-bin/gettoken?corpid=ww1&corpsecret=" + qs + "&debug=1 and /cgi-bin/tag/list?access_token=" + qt,
			"GET /cgi-bin/gettoken?corpid=ww1&corpsecret=REDACTED&debug=1 and /cgi-bin/tag/list?access_token=REDACTED"},
		{"query-escaped value with no key", []string{longSecret},
			"x=" + qs + " y=" + lowerHex(qs) + " z=" + url.PathEscape(longSecret),
			"x=REDACTED y=REDACTED z=REDACTED"},
		{"URL escaped in a query", []string{longSecret},
			"next=https%3A%2F%2Fq%2Fcgi-bin%2Fgettoken%3Fcorpid%3Dc%26corpsecret%3D" + url.QueryEscape(qs) + "%26x%3D1",
			"next=https%3A%2F%2Fq%2Fcgi-bin%2Fgettoken%3Fcorpid%3Dc%26corpsecret%3DREDACTED%26x%3D1"},
		{"unknown value escaped twice, by structure", nil,
			"next=https%3A%2F%2Fq%3Fcorpsecret%3Dab%252Fcd%26access_token%3Dxy%26x%3D1",
			"next=https%3A%2F%2Fq%3Fcorpsecret%3DREDACTED%26access_token%3DREDACTED%26x%3D1"},
		{"JSON", []string{longSecret},
			`{"errmsg":"bad","corpsecret":"` + strings.ReplaceAll(longSecret, "+", `\u002b`) + `", "ACCESS_TOKEN": "abc", "n":1}`,
			`{"errmsg":"bad","corpsecret":"REDACTED", "ACCESS_TOKEN": "REDACTED", "n":1}`},
		{"JSON-escaped value", []string{longSecret},
			`{"echo":"` + strings.ReplaceAll(longSecret, "/", `\/`) + `"}`, `{"echo":"REDACTED"}`},
		{"JSON inside a JSON string", nil,
			`{"errmsg":"{\"suite_access_token\":\"abc\",\"provider_secret\": \"d\"}"}`,
			`{"errmsg":"{\"suite_access_token\":\"REDACTED\",\"provider_secret\": \"REDACTED\"}"}`},
		{"query in JSON with escaped &", nil,
			`{"errmsg":"url /x?access_token=abc\u0026secret=d\u0026a=1"}`,
			`{"errmsg":"url /x?access_token=REDACTED\u0026secret=REDACTED\u0026a=1"}`},
		{"form-ish", nil,
			"Secret: abc\nPermanent_Code : xyz\nsuite_secret=q",
			"Secret: REDACTED\nPermanent_Code : REDACTED\nsuite_secret=REDACTED"},
		{"keys are matched whole", nil,
			"mysecret=1 secrets=2 access_tokens=3 secret_id=4 the secret is out",
			"mysecret=1 secrets=2 access_tokens=3 secret_id=4 the secret is out"},
		{"clean text unchanged", []string{longSecret, longToken},
			"api concurrent out of limit, hint: [1700000000_1_abc]", "api concurrent out of limit, hint: [1700000000_1_abc]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := newRedactor(tc.values...).text(tc.in); got != tc.want {
				t.Errorf("text(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

// errTexts returns the text of every error in err's chain, and the URL of
// every *url.Error in it.
func errTexts(err error) []string {
	if err == nil {
		return nil
	}
	out := []string{err.Error()}
	if ue, ok := err.(*url.Error); ok {
		out = append(out, ue.URL)
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, errTexts(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, errTexts(e)...)
		}
	}
	return out
}

func assertClean(t *testing.T, err error, values ...string) {
	t.Helper()
	for _, s := range errTexts(err) {
		for _, v := range values {
			for _, f := range []string{v, url.QueryEscape(v)} {
				if strings.Contains(s, f) {
					t.Errorf("%q in the chain holds %q", s, f)
				}
			}
		}
	}
}

// refusedDial returns the error of a GET to a loopback port nothing listens on.
func refusedDial(t *testing.T, query string) error {
	t.Helper()
	resp, err := (&http.Client{Transport: &http.Transport{}}).Get(refusedURL(t) + "/cgi-bin/gettoken?" + query)
	if err == nil {
		resp.Body.Close()
		t.Skip("something answers on a closed port")
	}
	return err
}

func TestRedactError(t *testing.T) {
	t.Parallel()
	r := newRedactor(longSecret, longToken)
	dialErr := refusedDial(t, "corpid=c&corpsecret="+url.QueryEscape(longSecret))
	t.Run("refused dial", func(t *testing.T) {
		err := r.err(fmt.Errorf("wecom: /cgi-bin/gettoken: %w", dialErr))
		assertClean(t, err, longSecret)
		var ue *url.Error
		if !errors.As(err, &ue) || !strings.Contains(ue.URL, "corpsecret=REDACTED") {
			t.Errorf("no *url.Error with a redacted URL in %v", err)
		}
		var oe *net.OpError
		if !errors.As(err, &oe) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("lost the *net.OpError or ECONNREFUSED: %v", err)
		}
		if !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), `"http://127.0.0.1:`) {
			t.Errorf("text mangled: %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		in := &url.Error{Op: "Get", URL: "https://q/cgi-bin/tag/list?access_token=" + longToken, Err: context.DeadlineExceeded}
		err := r.err(fmt.Errorf("attempt: %w", in))
		assertClean(t, err, longToken)
		var ne net.Error
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("lost the timeout: %v", err)
		}
	})
	t.Run("secret in a wrapped text", func(t *testing.T) {
		err := r.err(fmt.Errorf("proxy said %s: %w", longToken, fmt.Errorf("again %s: %w", longSecret, context.Canceled)))
		assertClean(t, err, longToken, longSecret)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("lost context.Canceled: %v", err)
		}
		if want := "proxy said REDACTED: again REDACTED: context canceled"; err.Error() != want {
			t.Errorf("got %q, want %q", err, want)
		}
	})
	t.Run("API error keeps its type", func(t *testing.T) {
		err := r.err(fmt.Errorf("x: %w", &APIError{Code: CodeInvalidAccessToken, Message: "invalid access_token: " + longToken, Path: "/p"}))
		assertClean(t, err, longToken)
		var ae *APIError
		if !errors.As(err, &ae) || ae.Message != "invalid access_token: REDACTED" || !errors.Is(err, ErrTokenInvalid) {
			t.Errorf("got %#v from %v", ae, err)
		}
	})
	t.Run("response error keeps its type", func(t *testing.T) {
		err := r.err(&ResponseError{Path: "/p", StatusCode: 200, Err: errors.New("body " + longSecret)})
		assertClean(t, err, longSecret)
		var re *ResponseError
		if !errors.As(err, &re) || re.StatusCode != 200 {
			t.Errorf("lost the *ResponseError: %v", err)
		}
	})
	t.Run("clean error is returned as is", func(t *testing.T) {
		in := fmt.Errorf("x: %w", refusedDial(t, "corpid=c"))
		if err := r.err(in); err != in {
			t.Errorf("a clean error was rewritten: %v", err)
		}
	})
	t.Run("unparsable URL", func(t *testing.T) {
		err := r.err(&url.Error{Op: "Get", URL: "%zz" + longToken, Err: context.DeadlineExceeded})
		assertClean(t, err, longToken)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("lost the cause: %v", err)
		}
	})
}

// The client redacts its secret and every token it held, the replaced ones
// included, up to maxHeldTokens.
func TestClientRedactsHeldTokens(t *testing.T) {
	t.Parallel()
	c, err := New("ww1", longSecret)
	if err != nil {
		t.Fatal(err)
	}
	toks := make([]string, maxHeldTokens+1)
	c.p.corp().mu.Lock()
	for i := range toks {
		toks[i] = fmt.Sprintf("%s-%02d", longToken, i)
		c.p.corp().remember(toks[i])
	}
	c.p.corp().remember(toks[1]) // seen again: now the newest
	c.p.corp().mu.Unlock()
	in := strings.Join(toks, " ") + " " + longSecret
	want := toks[0] + strings.Repeat(" REDACTED", len(toks))
	if got := c.p.redactText(in); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	c.p.corp().mu.Lock()
	c.p.corp().remember(longToken)
	c.p.corp().mu.Unlock()
	if got := c.p.redactText(toks[1] + " " + toks[2]); got != "REDACTED "+toks[2] {
		t.Errorf("the most recently seen token was dropped first: %q", got)
	}
	err = c.p.redactErr(fmt.Errorf("echo %s", toks[3]))
	if err.Error() != "echo REDACTED" {
		t.Errorf("redactErr: %v", err)
	}
}

// A one-character secret used to turn "https" into "httpREDACTED" and
// "refused" into "refuREDACTEDed".
func TestSanitizeErrorShortSecret(t *testing.T) {
	t.Parallel()
	in := &url.Error{Op: "Get", URL: "https://127.0.0.1:1/cgi-bin/gettoken?corpid=c&corpsecret=s", Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}
	want := `Get "https://127.0.0.1:1/cgi-bin/gettoken?corpid=c&corpsecret=REDACTED": dial tcp 127.0.0.1:1: connect: connection refused`
	if got := newRedactor("s").err(in).Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A token source's error that echoes the token, and the token store's
// errors, reach neither the caller nor the log.
func TestTokenErrorsRedacted(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	src := TokenSourceFunc(func(context.Context) (Token, error) {
		return Token{Value: longToken}, fmt.Errorf("central token service: %s expired, access_token=%s", longToken, longToken)
	})
	c, err := New("ww1", longSecret, WithTokenSource(src), WithTokenStore(failingStore{}),
		WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.p.corp().token(context.Background())
	if err == nil || !strings.Contains(err.Error(), "central token service: REDACTED expired") {
		t.Fatalf("err = %v", err)
	}
	assertClean(t, err, longToken)
	c.p.corp().invalidate(context.Background(), longToken)
	out := logs.String()
	if strings.Contains(out, longToken) || strings.Contains(out, longSecret) {
		t.Errorf("log holds a credential:\n%s", out)
	}
	for _, want := range []string{"access token fetch failed", "token store get failed", "token store delete failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// failingStore fails, echoing the token it was given.
type failingStore struct{}

func (failingStore) Get(context.Context, string) (Token, error) {
	return Token{}, errors.New("store down: secret=" + longSecret)
}

func (failingStore) Set(_ context.Context, _ string, t Token) error {
	return errors.New("store down: " + t.Value)
}

func (failingStore) Delete(_ context.Context, _, v string) error {
	return errors.New("store down: DEL " + v)
}

func BenchmarkRedactText(b *testing.B) {
	c, err := New("ww1", longSecret)
	if err != nil {
		b.Fatal(err)
	}
	c.p.corp().mu.Lock()
	for i := range maxHeldTokens {
		c.p.corp().remember(fmt.Sprintf("%s-%02d", longToken, i))
	}
	c.p.corp().mu.Unlock()
	msg := "api concurrent out of limit, hint: [1700000000_12_3456789abcdef], from ip: 1.2.3.4, more info at https://open.work.weixin.qq.com/devtool/query?e=45033"
	b.ReportAllocs()
	for b.Loop() {
		_ = c.p.redactText(msg)
	}
}
