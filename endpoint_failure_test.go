package wecom

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
)

// failureEndpoint is one typed endpoint method, called with valid input.
type failureEndpoint struct {
	name         string
	method, path string
	// idempotent: safe to repeat, so retried after -1, 6000, transport
	// errors, HTTP 5xx and malformed answers.
	idempotent bool
	call       func(ctx context.Context, c *Client) error
}

// failureEndpoints lists every endpoint method of the SDK.
func failureEndpoints() []failureEndpoint {
	return []failureEndpoint{
		{"Tags.Create", "POST", pathTagCreate, false, func(ctx context.Context, c *Client) error {
			_, err := c.Tags.Create(ctx, TagCreateRequest{Name: "UI"})
			return err
		}},
		{"Tags.Update", "POST", pathTagUpdate, true, func(ctx context.Context, c *Client) error {
			return c.Tags.Update(ctx, TagUpdateRequest{ID: 12, Name: "UI design"})
		}},
		{"Tags.Delete", "GET", pathTagDelete, true, func(ctx context.Context, c *Client) error {
			return c.Tags.Delete(ctx, 12)
		}},
		{"Tags.Members", "GET", pathTagGet, true, func(ctx context.Context, c *Client) error {
			_, err := c.Tags.Members(ctx, 12)
			return err
		}},
		{"Tags.List", "GET", pathTagList, true, func(ctx context.Context, c *Client) error {
			_, err := c.Tags.List(ctx)
			return err
		}},
		{"Tags.AddMembers", "POST", pathTagAddUsers, true, func(ctx context.Context, c *Client) error {
			_, err := c.Tags.AddMembers(ctx, TagMembersRequest{TagID: 12, Users: []string{"u1"}, Parties: []int{4}})
			return err
		}},
		{"Tags.RemoveMembers", "POST", pathTagDelUsers, true, func(ctx context.Context, c *Client) error {
			_, err := c.Tags.RemoveMembers(ctx, TagMembersRequest{TagID: 12, Users: []string{"u1"}, Parties: []int{4}})
			return err
		}},
		{"CustomerTags.List", "POST", pathCorpTagList, true, func(ctx context.Context, c *Client) error {
			_, err := c.CustomerTags.List(ctx, CorpTagListRequest{GroupIDs: []string{"etG"}})
			return err
		}},
		{"CustomerTags.Add", "POST", pathCorpTagAdd, false, func(ctx context.Context, c *Client) error {
			_, err := c.CustomerTags.Add(ctx, CorpTagAddRequest{GroupID: "etG", Tags: []CorpTagSpec{{Name: "VIP"}}})
			return err
		}},
		{"CustomerTags.Edit", "POST", pathCorpTagEdit, true, func(ctx context.Context, c *Client) error {
			return c.CustomerTags.Edit(ctx, CorpTagEditRequest{ID: "etT", Name: "VIP"})
		}},
		{"CustomerTags.Delete", "POST", pathCorpTagDel, true, func(ctx context.Context, c *Client) error {
			return c.CustomerTags.Delete(ctx, CorpTagDeleteRequest{TagIDs: []string{"etT"}})
		}},
		{"CustomerTags.Mark", "POST", pathMarkTag, true, func(ctx context.Context, c *Client) error {
			return c.CustomerTags.Mark(ctx, MarkTagRequest{UserID: "zhangsan", ExternalUserID: "wmX", AddTags: []string{"etT"}})
		}},
	}
}

func TestEndpointFailures(t *testing.T) {
	t.Parallel()
	for _, ep := range failureEndpoints() {
		t.Run(ep.name, func(t *testing.T) {
			t.Parallel()
			testEndpointFailure(t, ep)
		})
	}
}

// endpointSentinels are every class sentinel a caller may branch on.
var endpointSentinels = []error{
	ErrConcurrencyLimited, ErrRateLimited, ErrTokenInvalid, ErrBadCredentials, ErrSystemBusy, ErrInvalidRequest,
}

// testEndpointFailure drives one endpoint through every shared failure case,
// each against a fresh fixture (setup's policy: MaxRetries 3,
// MaxConcurrencyRetries 5).
func testEndpointFailure(t *testing.T, ep failureEndpoint) {
	t.Helper()
	busyAttempts := 1
	if ep.idempotent {
		busyAttempts = 1 + 3
	}
	codes := []struct {
		code     int
		sentinel error // nil: none matches
		attempts int
		tokens   int // gettoken calls
	}{
		{CodeSystemBusy, ErrSystemBusy, busyAttempts, 1},
		{CodeDataVersionConflict, ErrSystemBusy, busyAttempts, 1},
		{CodeInvalidAccessToken, ErrTokenInvalid, 2, 2},
		{CodeAccessTokenExpired, ErrTokenInvalid, 2, 2},
		{CodeAccessTokenMissing, ErrTokenInvalid, 1, 1},
		{CodeFrequencyLimited, ErrRateLimited, 1, 1},
		{CodeConcurrencyLimited, ErrConcurrencyLimited, 1 + 5, 1},
		{CodeAPINotAllowed, nil, 1, 1},
		{CodeNoPrivilege, nil, 1, 1},
		{CodeIPNotTrusted, nil, 1, 1},
		{CodeInvalidTagID, nil, 1, 1},
		{CodeTagNotOwned, nil, 1, 1},
		{CodeTokenOfOtherApp, nil, 1, 1},
	}
	for _, tc := range codes {
		t.Run(fmt.Sprintf("errcode %d", tc.code), func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			msg := fmt.Sprintf("fake error %d", tc.code)
			f.respond(ep.method, ep.path, fmt.Sprintf(`{"errcode":%d,"errmsg":%q}`, tc.code, msg))
			err := f.record(ep.call(context.Background(), f.c))

			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want an *APIError in its chain", err, err)
			}
			if ae.Code != tc.code || ae.Path != ep.path || ae.Message != msg {
				t.Errorf("APIError{Code %d, Path %q, Message %q}, want {%d, %q, %q}", ae.Code, ae.Path, ae.Message, tc.code, ep.path, msg)
			}
			if tc.code == CodeFrequencyLimited {
				var rl *RateLimitError
				if !errors.As(err, &rl) {
					t.Fatalf("err = %T, want a *RateLimitError", err)
				}
				if rl.Path != ep.path || rl.RetryAfter != time.Minute {
					t.Errorf("RateLimitError{Path %q, RetryAfter %s}, want {%q, 1m0s}", rl.Path, rl.RetryAfter, ep.path)
				}
			}
			for _, s := range endpointSentinels {
				if got, want := errors.Is(err, s), s == tc.sentinel; got != want {
					t.Errorf("errors.Is(err, %q) = %t, want %t", s, got, want)
				}
			}
			if n := f.calls(ep.method, ep.path); n != tc.attempts {
				t.Errorf("%d attempts, want %d", n, tc.attempts)
			}
			if n := f.calls("GET", pathGetToken); n != tc.tokens {
				t.Errorf("%d gettoken calls, want %d", n, tc.tokens)
			}

			if tc.code != CodeFrequencyLimited {
				return
			}
			// The API now cools down: the next call fails without a request.
			total := f.mt.GetTotalCallCount()
			err = f.record(ep.call(context.Background(), f.c))
			if !errors.Is(err, ErrRateLimited) {
				t.Fatalf("call during the cooldown: err = %v, want ErrRateLimited", err)
			}
			var rl *RateLimitError
			if !errors.As(err, &rl) {
				t.Fatalf("call during the cooldown: err = %T, want a *RateLimitError", err)
			}
			if rl.RetryAfter <= 0 || rl.RetryAfter > time.Minute {
				t.Errorf("call during the cooldown: RetryAfter %s, want in (0, 1m]", rl.RetryAfter)
			}
			if n := f.mt.GetTotalCallCount() - total; n != 0 {
				t.Errorf("call during the cooldown sent %d requests, want none", n)
			}
		})
	}

	t.Run("transport error", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		cause := errors.New("connection reset by peer")
		f.mt.RegisterResponder(ep.method, testBaseURL+ep.path, httpmock.NewErrorResponder(cause))
		err := f.record(ep.call(context.Background(), f.c))
		if err == nil {
			t.Fatal("err = nil, want the transport error")
		}
		if !errors.Is(err, cause) {
			t.Errorf("err = %v, want it to wrap the transport error", err)
		}
		var ae *APIError
		var re *ResponseError
		if errors.As(err, &ae) || errors.As(err, &re) {
			t.Errorf("err = %v, want neither *APIError nor *ResponseError", err)
		}
		if n := f.calls(ep.method, ep.path); n != busyAttempts {
			t.Errorf("%d attempts, want %d", n, busyAttempts)
		}
	})

	// Answers that are not WeCom's are never a success: a gateway's JSON,
	// null, an array, a string, an empty object, half an object.
	for _, body := range []string{"{not json", `{"message":"blocked"}`, `null`, `[]`, `"ok"`, `{}`, ` {"errmsg":"ok"}`} {
		t.Run("not WeCom's "+body, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.respond(ep.method, ep.path, body)
			err := f.record(ep.call(context.Background(), f.c))
			var re *ResponseError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v (%T), want a *ResponseError", err, err)
			}
			if re.StatusCode != http.StatusOK || re.Err == nil || re.Path != ep.path {
				t.Errorf("ResponseError{StatusCode %d, Path %q, Err %v}, want 200, %q and a decoding error", re.StatusCode, re.Path, re.Err, ep.path)
			}
			if n := f.calls(ep.method, ep.path); n != busyAttempts {
				t.Errorf("%d attempts, want %d", n, busyAttempts)
			}
		})
	}

	t.Run("HTTP 502", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.mt.RegisterResponder(ep.method, testBaseURL+ep.path, httpmock.NewStringResponder(http.StatusBadGateway, "<html>502 Bad Gateway</html>"))
		err := f.record(ep.call(context.Background(), f.c))
		var re *ResponseError
		if !errors.As(err, &re) {
			t.Fatalf("err = %v (%T), want a *ResponseError", err, err)
		}
		if re.StatusCode != http.StatusBadGateway || re.Path != ep.path {
			t.Errorf("ResponseError{StatusCode %d, Path %q}, want 502, %q", re.StatusCode, re.Path, ep.path)
		}
		if n := f.calls(ep.method, ep.path); n != busyAttempts {
			t.Errorf("%d attempts, want %d", n, busyAttempts)
		}
	})

	for _, warm := range []bool{false, true} {
		name := "cancelled context, no token yet"
		if warm {
			name = "cancelled context, token cached"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.respond(ep.method, ep.path, `{"errcode":0,"errmsg":"ok"}`)
			if warm {
				if _, err := f.c.tokens.token(context.Background()); f.record(err) != nil {
					t.Fatalf("warming the token: %v", err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := f.record(ep.call(ctx, f.c))
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if n := f.calls(ep.method, ep.path); n != 0 {
				t.Errorf("%d API requests sent, want none", n)
			}
			if warm {
				if n := f.mt.GetTotalCallCount(); n != 1 {
					t.Errorf("%d HTTP requests in all, want only the warming gettoken", n)
				}
				return
			}
			// Let a token fetch the call may have started finish inside the test.
			if _, err := f.c.tokens.token(context.Background()); f.record(err) != nil {
				t.Errorf("token after the cancelled call: %v", err)
			}
		})
	}
}
