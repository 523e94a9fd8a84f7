package wecom_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/mock"
)

// The path every user takes first: httpmock.Activate replaces
// http.DefaultTransport, and the client must work on it, with no option and
// with WithHTTPClient(http.DefaultClient), and never panic.
// Not parallel: httpmock.Activate changes http.DefaultTransport.
func TestHTTPMockActivate(t *testing.T) {
	httpmock.Activate(t)
	m, err := mock.New(mock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.AddApp("wwhttpmock", "httpmock-secret")
	m.Register(httpmock.DefaultTransport, wecom.DefaultBaseURL)
	tests := []struct {
		name string
		opts []wecom.Option
	}{
		{"no transport option", nil},
		{"http.DefaultClient", []wecom.Option{wecom.WithHTTPClient(http.DefaultClient)}},
		{"a client with a nil Transport", []wecom.Option{wecom.WithHTTPClient(&http.Client{})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := wecom.New("wwhttpmock", "httpmock-secret", tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Tags.Create(context.Background(), wecom.TagCreateRequest{Name: tt.name[:4]}); err != nil {
				t.Fatalf("Create through httpmock: %v", err)
			}
		})
	}
	if n := httpmock.GetCallCountInfo()["GET "+wecom.DefaultBaseURL+"/cgi-bin/gettoken"]; n != len(tests) {
		t.Errorf("%d gettoken calls reached httpmock, want %d", n, len(tests))
	}
}

// Test code that uses the SDK with httpmock: activate it, register the mock
// WeCom's responders under the real base URL, and create clients as usual.
func Example_httpmock() {
	httpmock.Activate()
	defer httpmock.DeactivateAndReset()

	m, err := mock.New(mock.Config{})
	if err != nil {
		panic(err)
	}
	m.AddApp("wwcorp", "app-secret")
	m.Register(httpmock.DefaultTransport, wecom.DefaultBaseURL)

	c, err := wecom.New("wwcorp", "app-secret") // no option: http.DefaultTransport is httpmock's
	if err != nil {
		panic(err)
	}
	id, err := c.Tags.Create(context.Background(), wecom.TagCreateRequest{Name: "VIP"})
	fmt.Println(id > 0, err)
	// Output: true <nil>
}

// Test your own handling of WeCom's errors: script the mock to answer the
// next mark of one customer with 40068 (invalid tag) and see it as an
// *APIError; every other call is modelled as usual.
func ExampleCustomerTagService_Mark_scriptedError() {
	mt := httpmock.NewMockTransport()
	m, err := mock.New(mock.Config{})
	if err != nil {
		panic(err)
	}
	m.AddApp("wwcorp", "app-secret")
	m.Register(mt, wecom.DefaultBaseURL)
	c, err := wecom.New("wwcorp", "app-secret", wecom.WithTransport(mt))
	if err != nil {
		panic(err)
	}
	err = m.AddScript(mock.Script{
		Path:    "/cgi-bin/externalcontact/mark_tag",
		Match:   func(_ *http.Request, body []byte) bool { return strings.Contains(string(body), `"wmA"`) },
		ErrCode: wecom.CodeInvalidTagID,
		ErrMsg:  "invalid tagid",
	})
	if err != nil {
		panic(err)
	}
	err = c.CustomerTags.Mark(context.Background(), wecom.MarkTagRequest{UserID: "zhangsan", ExternalUserID: "wmA", AddTags: []string{"et1"}})
	var ae *wecom.APIError
	if errors.As(err, &ae) {
		fmt.Println("errcode", ae.Code)
	}
	fmt.Println("scripted answers:", m.Stats().Scripted)
	// Output:
	// errcode 40068
	// scripted answers: 1
}

// A partial RetryPolicy keeps the defaults of the fields it leaves at zero,
// and NoRetries means none: seen from the attempts WeCom receives.
func TestPartialRetryPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		policy       wecom.RetryPolicy
		wantAttempts int
	}{
		{"MaxRetries only", wecom.RetryPolicy{MaxRetries: 2, InitialInterval: time.Millisecond}, 3},
		{"defaults", wecom.RetryPolicy{InitialInterval: time.Millisecond}, 4},
		{"NoRetries", wecom.RetryPolicy{MaxRetries: wecom.NoRetries}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mt := httpmock.NewMockTransport()
			m, err := mock.New(mock.Config{})
			if err != nil {
				t.Fatal(err)
			}
			m.AddApp("wwcorp", "app-secret")
			m.Register(mt, wecom.DefaultBaseURL)
			if err := m.AddScript(mock.Script{Path: "/cgi-bin/tag/list", Times: 10, ErrCode: wecom.CodeSystemBusy}); err != nil {
				t.Fatal(err)
			}
			c, err := wecom.New("wwcorp", "app-secret", wecom.WithTransport(mt), wecom.WithRetryPolicy(tt.policy))
			if err != nil {
				t.Fatalf("New with %+v: %v", tt.policy, err)
			}
			if _, err := c.Tags.List(context.Background()); !errors.Is(err, wecom.ErrSystemBusy) {
				t.Fatalf("err = %v, want ErrSystemBusy", err)
			}
			if got := m.Stats().Calls["/cgi-bin/tag/list"]; got != tt.wantAttempts {
				t.Errorf("%d attempts reached WeCom, want %d", got, tt.wantAttempts)
			}
		})
	}
}
