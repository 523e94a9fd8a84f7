package wecom_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
)

// TestSignInWire: auth/getuserinfo is a GET of /cgi-bin/auth/getuserinfo
// (not the retired user/getuserinfo) with the code in the query, and its
// answers, as document/path/91023 shows them with lowercase keys, come back
// as a member or as a visitor, never both.
func TestSignInWire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, answer string
		member       *wecom.MemberSignIn
		visitor      *wecom.VisitorSignIn
	}{
		{name: "member, privateinfo", answer: `{"errcode":0,"errmsg":"ok","userid":"USERID","user_ticket":"USER_TICKET"}`,
			member: &wecom.MemberSignIn{UserID: "USERID", Ticket: "USER_TICKET"}},
		{name: "member, base", answer: `{"errcode":0,"errmsg":"ok","userid":"USERID"}`,
			member: &wecom.MemberSignIn{UserID: "USERID"}},
		{name: "member of a linked corp", answer: `{"errcode":0,"errmsg":"ok","userid":"CorpId/userid"}`,
			member: &wecom.MemberSignIn{UserID: "CorpId/userid"}},
		{name: "visitor, a customer", answer: `{"errcode":0,"errmsg":"ok","openid":"OPENID","external_userid":"EXTERNAL_USERID"}`,
			visitor: &wecom.VisitorSignIn{OpenID: "OPENID", ExternalUserID: "EXTERNAL_USERID"}},
		{name: "visitor", answer: `{"errcode":0,"errmsg":"ok","openid":"OPENID"}`,
			visitor: &wecom.VisitorSignIn{OpenID: "OPENID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mt, sent := recorded(map[catalog.ID]string{catalog.AuthGetUserInfo: tc.answer})
			c := setup(t, wecom.WithTransport(mt))
			si, err := c.Auth.SignIn(context.Background(), "CODE")
			if err != nil {
				t.Fatal(err)
			}
			if got := sent(); len(got) != 1 || got[0].method != http.MethodGet || got[0].path != "/cgi-bin/auth/getuserinfo" ||
				got[0].query != "code=CODE" || got[0].body != "" {
				t.Errorf("sent %+v, want one GET of /cgi-bin/auth/getuserinfo?code=CODE", got)
			}
			switch {
			case (si.Member == nil) == (si.Visitor == nil):
				t.Fatalf("SignIn = %+v: want exactly one of Member and Visitor", si)
			case tc.member != nil && (si.Member == nil || *si.Member != *tc.member):
				t.Errorf("Member = %+v, want %+v", si.Member, tc.member)
			case tc.visitor != nil && (si.Visitor == nil || *si.Visitor != *tc.visitor):
				t.Errorf("Visitor = %+v, want %+v", si.Visitor, tc.visitor)
			}
		})
	}
}

// TestSignInNeitherOrBoth: an answer that names no one, or a member and a
// visitor at once, is not WeCom's documented answer: an error, never a
// SignIn a caller could read as a member.
func TestSignInNeitherOrBoth(t *testing.T) {
	t.Parallel()
	for name, answer := range map[string]string{
		"neither":     `{"errcode":0,"errmsg":"ok"}`,
		"empty":       `{"errcode":0,"errmsg":"ok","userid":"","openid":""}`,
		"both":        `{"errcode":0,"errmsg":"ok","userid":"USERID","openid":"OPENID"}`,
		"wrong types": `{"errcode":0,"errmsg":"ok","userid":12}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			mt, _ := recorded(map[catalog.ID]string{catalog.AuthGetUserInfo: answer})
			c := setup(t, wecom.WithTransport(mt))
			si, err := c.Auth.SignIn(context.Background(), "CODE")
			var re *wecom.ResponseError
			if !errors.As(err, &re) || si.Member != nil || si.Visitor != nil {
				t.Errorf("SignIn = %+v, %v; want no one and a *ResponseError", si, err)
			}
		})
	}
}

// TestPrivateInfoWire: auth/getuserdetail is a POST to its own path (a peer
// SDK posted it to auth/getuserinfo, with the ticket under form_params:
// ArtisanCloud/PowerWeChat#278) whose body is {"user_ticket"} and whose URL
// holds no ticket; its documented answer (document/path/95833) decodes,
// gender a string.
func TestPrivateInfoWire(t *testing.T) {
	t.Parallel()
	mt, sent := recorded(map[catalog.ID]string{catalog.AuthGetUserDetail: `{
		"errcode": 0,
		"errmsg": "ok",
		"userid":"lisi",
		"gender":"1",
		"avatar":"http://shp.qpic.cn/bizmp/xxxxxxxxxxx/0",
		"qr_code":"https://open.work.weixin.qq.com/wwopen/userQRCode?vcode=vcfc13b01dfs78e981c",
		"mobile": "13800000000",
		"email": "zhangsan@gzdev.com",
		"biz_mail":"zhangsan@qyycs2.wecom.work",
		"address": "广州市海珠区新港中路"
	}`})
	c := setup(t, wecom.WithTransport(mt))
	info, err := c.Auth.PrivateInfo(context.Background(), "USER_TICKET")
	if err != nil {
		t.Fatal(err)
	}
	want := wecom.PrivateInfo{UserID: "lisi", Gender: "1", Avatar: "http://shp.qpic.cn/bizmp/xxxxxxxxxxx/0",
		QRCode: "https://open.work.weixin.qq.com/wwopen/userQRCode?vcode=vcfc13b01dfs78e981c", Mobile: "13800000000",
		Email: "zhangsan@gzdev.com", BizMail: "zhangsan@qyycs2.wecom.work", Address: "广州市海珠区新港中路"}
	if info != want {
		t.Errorf("PrivateInfo = %+v\nwant %+v", info, want)
	}
	got := sent()
	if len(got) != 1 || got[0].method != http.MethodPost || got[0].path != "/cgi-bin/auth/getuserdetail" || got[0].query != "" {
		t.Fatalf("sent %+v, want one POST of /cgi-bin/auth/getuserdetail with only the token in its query", got)
	}
	wantJSON(t, got[0].body, `{"user_ticket":"USER_TICKET"}`)
}

// TestSignInInvalid: what WeCom would refuse is refused unsent.
func TestSignInInvalid(t *testing.T) {
	t.Parallel()
	mt, sent := recorded(map[catalog.ID]string{
		catalog.AuthGetUserInfo:   `{"errcode":0,"errmsg":"ok","userid":"u"}`,
		catalog.AuthGetUserDetail: `{"errcode":0,"errmsg":"ok","userid":"u"}`,
	})
	c := setup(t, wecom.WithTransport(mt))
	ctx := context.Background()
	for name, err := range map[string]error{
		"no code":         second(c.Auth.SignIn(ctx, "")),
		"a code too long": second(c.Auth.SignIn(ctx, strings.Repeat("c", wecom.MaxSignInCodeBytes+1))),
		"no ticket":       second(c.Auth.PrivateInfo(ctx, "")),
	} {
		if !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if n := len(sent()); n != 0 {
		t.Errorf("%d sent", n)
	}
}

// second returns the error of a call's two results.
func second[T any](_ T, err error) error { return err }

// TestSignInMock: on the mock, a code signs in once, within five minutes
// of its clock; a member's privateinfo ticket reads the member's fields,
// again and again, for 1,800 seconds; a visitor is told apart.
func TestSignInMock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newMock(t, mock.Config{TokenTTL: 24 * time.Hour}, "zhangsan")
		c := setup(t, on(srv))
		ctx := context.Background()
		invalidCode := func(what string, err error) {
			t.Helper()
			var ae *wecom.APIError
			if !errors.As(err, &ae) || ae.Code != wecom.CodeInvalidOAuthCode {
				t.Errorf("%s: %v, want errcode %d", what, err, wecom.CodeInvalidOAuthCode)
			}
		}

		code := srv.SignInCode(testCorp, mock.SignIn{UserID: "zhangsan", Private: &mock.PrivateInfo{Gender: "2", Mobile: "13800000000"}})
		si, err := c.Auth.SignIn(ctx, code)
		if err != nil || si.Member == nil || si.Visitor != nil || si.Member.UserID != "zhangsan" || si.Member.Ticket == "" {
			t.Fatalf("SignIn = %+v, %v; want member zhangsan with a ticket", si, err)
		}
		_, err = c.Auth.SignIn(ctx, code)
		invalidCode("the code again", err)
		_, err = c.Auth.SignIn(ctx, "a-code-never-issued")
		invalidCode("a code never issued", err)

		ticket := si.Member.Ticket
		time.Sleep(wecom.UserTicketTTL - time.Second)
		for range 2 {
			info, err := c.Auth.PrivateInfo(ctx, ticket)
			if err != nil || info != (wecom.PrivateInfo{UserID: "zhangsan", Gender: "2", Mobile: "13800000000"}) {
				t.Errorf("PrivateInfo = %+v, %v", info, err)
			}
		}
		time.Sleep(time.Second)
		_, err = c.Auth.PrivateInfo(ctx, ticket)
		invalidCode("a ticket 1,800 s old", err)

		base := srv.SignInCode(testCorp, mock.SignIn{UserID: "zhangsan"})
		if si, err := c.Auth.SignIn(ctx, base); err != nil || si.Member == nil || si.Member.Ticket != "" {
			t.Errorf("a snsapi_base sign-in = %+v, %v; want a member without a ticket", si, err)
		}
		visitor := srv.SignInCode(testCorp, mock.SignIn{OpenID: "oVisitor", ExternalUserID: "wmCustomer"})
		if si, err := c.Auth.SignIn(ctx, visitor); err != nil || si.Member != nil || si.Visitor == nil ||
			*si.Visitor != (wecom.VisitorSignIn{OpenID: "oVisitor", ExternalUserID: "wmCustomer"}) {
			t.Errorf("a visitor's sign-in = %+v, %v", si, err)
		}

		almost := srv.SignInCode(testCorp, mock.SignIn{UserID: "zhangsan"})
		late := srv.SignInCode(testCorp, mock.SignIn{UserID: "zhangsan"})
		time.Sleep(wecom.SignInCodeTTL - time.Second)
		if _, err := c.Auth.SignIn(ctx, almost); err != nil {
			t.Errorf("a code 4m59s old: %v", err)
		}
		time.Sleep(time.Second)
		_, err = c.Auth.SignIn(ctx, late)
		invalidCode("a code 5 minutes old", err)
	})
}

// TestSignInCredentialsNotShown: a code and a user ticket are credentials:
// no error shows them, though a transport error names the URL the code is
// in and a proxy's answer echoes the body the ticket is in; printing a
// MemberSignIn hides its ticket.
func TestSignInCredentialsNotShown(t *testing.T) {
	t.Parallel()
	const code, ticket = "CODE-must-not-show-0123456789", "TICKET-must-not-show-0123456789"
	mt := tokenTransport()
	mt.RegisterResponder(http.MethodGet, testBase+catalog.AuthGetUserInfo.Path(), func(r *http.Request) (*http.Response, error) {
		return nil, fmt.Errorf("dial tcp: connection refused for %s", r.URL)
	})
	mt.RegisterResponder(http.MethodPost, testBase+catalog.AuthGetUserDetail.Path(), func(r *http.Request) (*http.Response, error) {
		body, _ := io.ReadAll(r.Body)
		return httpmock.NewStringResponse(http.StatusBadGateway, "<html>bad gateway for "+string(body)+"</html>"), nil
	})
	c := setup(t, wecom.WithTransport(mt), fastRetries())
	ctx := context.Background()
	_, err := c.Auth.SignIn(ctx, code)
	if err == nil || strings.Contains(err.Error(), code) {
		t.Errorf("SignIn's error %v: want one that does not show the code", err)
	}
	_, err = c.Auth.PrivateInfo(ctx, ticket)
	if err == nil || strings.Contains(err.Error(), ticket) {
		t.Errorf("PrivateInfo's error %v: want one that does not show the ticket", err)
	}
	m := wecom.MemberSignIn{UserID: "zhangsan", Ticket: ticket}
	for _, s := range []string{fmt.Sprint(m), fmt.Sprintf("%+v", m), fmt.Sprintf("%v", wecom.SignIn{Member: &m})} {
		if strings.Contains(s, ticket) {
			t.Errorf("printed %q shows the ticket", s)
		}
	}
	if string(m.Ticket) != ticket {
		t.Errorf("string(Ticket) = %q, want the ticket", string(m.Ticket))
	}
}

// countingLimiter records the windows each limiter key is asked to count.
type countingLimiter struct {
	throttle.Backend
	mu      sync.Mutex
	windows map[string]int // key → windows asked
}

func newCountingLimiter() *countingLimiter {
	return &countingLimiter{Backend: throttle.NewMemory(), windows: map[string]int{}}
}

func (l *countingLimiter) note(r throttle.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.windows[r.Key] += len(r.Windows)
}

func (l *countingLimiter) TryAcquire(ctx context.Context, r throttle.Request) (throttle.Lease, error) {
	l.note(r)
	return l.Backend.TryAcquire(ctx, r)
}

func (l *countingLimiter) Acquire(ctx context.Context, r throttle.Request) (throttle.Lease, error) {
	l.note(r)
	return l.Backend.Acquire(ctx, r)
}

// counted returns the windows asked of the keys that name path.
func (l *countingLimiter) counted(path string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k, w := range l.windows {
		if strings.Contains(k, path) {
			n += w
		}
	}
	return n
}

// TestSignInNotCounted: WeCom exempts sign-ins from its frequency limits,
// so the client counts auth/getuserinfo in no window (while getuserdetail
// counts in its API's); as on every row, WithLimits gives it one.
func TestSignInNotCounted(t *testing.T) {
	t.Parallel()
	if rules := wecom.DefaultLimits(catalog.AuthGetUserInfo.Path()); len(rules) != 0 {
		t.Errorf("DefaultLimits(getuserinfo) = %v, want none", rules)
	}
	for _, tc := range []struct {
		name     string
		opts     []wecom.Option
		counted  bool
		detailed bool
	}{
		{name: "default", detailed: true},
		{name: "WithLimits", opts: []wecom.Option{wecom.WithLimits(catalog.AuthGetUserInfo.Path(), wecom.Limits{PerMinute: 100})}, counted: true},
		{name: "WithRule", opts: []wecom.Option{wecom.WithRule(catalog.AuthGetUserInfo.Path(),
			catalog.Rule{Name: "mine", Scope: catalog.ScopeAPI, Limit: 100, Per: catalog.Hour})}, counted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newMock(t, mock.Config{}, "zhangsan")
			lim := newCountingLimiter()
			c := setup(t, append([]wecom.Option{on(srv), wecom.WithLimiter(lim)}, tc.opts...)...)
			ctx := context.Background()
			for range 3 {
				code := srv.SignInCode(testCorp, mock.SignIn{UserID: "zhangsan", Private: &mock.PrivateInfo{}})
				si, err := c.Auth.SignIn(ctx, code)
				if err != nil {
					t.Fatal(err)
				}
				if tc.detailed {
					if _, err := c.Auth.PrivateInfo(ctx, si.Member.Ticket); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n := lim.counted(catalog.AuthGetUserInfo.Path()); (n > 0) != tc.counted {
				t.Errorf("getuserinfo counted in %d windows, want counted %t", n, tc.counted)
			}
			if n := lim.counted(catalog.AuthGetUserDetail.Path()); tc.detailed && n == 0 {
				t.Error("getuserdetail counted in no window: the recorder sees nothing")
			}
		})
	}
}

// upperHex upper-cases the hex digits of the %XX escapes of s: WeCom's
// pages escape with either case, which a URL reads alike.
func upperHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = strings.ToUpper(string(b[i+1]))[0], strings.ToUpper(string(b[i+2]))[0]
			i += 2
		}
	}
	return string(b)
}

// exampleCorpClient is a client of the corp id WeCom's examples use; it
// calls nothing.
func exampleCorpClient(t *testing.T, opts ...wecom.Option) *wecom.Client {
	t.Helper()
	c, err := wecom.New("wxCorpId", "secret", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAuthorizeURL: the OAuth URL is document/path/91022's example, and
// its template with snsapi_privateinfo and an agent id.
func TestAuthorizeURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []wecom.Option
		req  wecom.AuthorizeRequest
		want string
	}{
		{name: "the page's example", req: wecom.AuthorizeRequest{RedirectURI: "http://api.3dept.com/cgi-bin/query?action=get"},
			want: "https://open.weixin.qq.com/connect/oauth2/authorize?appid=wxCorpId&redirect_uri=http%3a%2f%2fapi.3dept.com%2fcgi-bin%2fquery%3faction%3dget&response_type=code&scope=snsapi_base&state=#wechat_redirect"},
		{name: "privateinfo, the client's agent", opts: []wecom.Option{wecom.WithAgentID(1000002)},
			req:  wecom.AuthorizeRequest{RedirectURI: "https://api.3dept.com/cb", Scope: wecom.ScopePrivateInfo, State: "STATE"},
			want: "https://open.weixin.qq.com/connect/oauth2/authorize?appid=wxCorpId&redirect_uri=https%3A%2F%2Fapi.3dept.com%2Fcb&response_type=code&scope=snsapi_privateinfo&state=STATE&agentid=1000002#wechat_redirect"},
		{name: "base, an agent given", opts: []wecom.Option{wecom.WithAgentID(1000002)},
			req:  wecom.AuthorizeRequest{RedirectURI: "https://api.3dept.com/cb", State: "s1", AgentID: 1000005},
			want: "https://open.weixin.qq.com/connect/oauth2/authorize?appid=wxCorpId&redirect_uri=https%3A%2F%2Fapi.3dept.com%2Fcb&response_type=code&scope=snsapi_base&state=s1&agentid=1000005#wechat_redirect"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := exampleCorpClient(t, tc.opts...).Auth.AuthorizeURL(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if upperHex(got) != upperHex(tc.want) {
				t.Errorf("AuthorizeURL =\n%s\nwant\n%s", got, tc.want)
			}
			u, err := url.Parse(got)
			if err != nil || u.Query().Get("redirect_uri") != tc.req.RedirectURI || u.Fragment != "wechat_redirect" {
				t.Errorf("%s does not carry the redirect URI %q and #wechat_redirect", got, tc.req.RedirectURI)
			}
		})
	}
}

// TestWebLoginURL: the web login URL is document/path/98152's template
// (login_type, appid, agentid, redirect_uri, state, lang) with the values
// of document/path/91019's example (corp wxCorpId, app 1000000, redirect
// http://api.3dept.com, escaped as that page escapes it).
func TestWebLoginURL(t *testing.T) {
	t.Parallel()
	c := exampleCorpClient(t, wecom.WithAgentID(1000000))
	got, err := c.Auth.WebLoginURL(wecom.WebLoginRequest{RedirectURI: "http://api.3dept.com", State: "WWLogin"})
	want := "https://login.work.weixin.qq.com/wwlogin/sso/login?login_type=CorpApp&appid=wxCorpId&agentid=1000000&redirect_uri=http%3A%2F%2Fapi.3dept.com&state=WWLogin"
	if err != nil || got != want {
		t.Errorf("WebLoginURL = %s, %v\nwant %s", got, err, want)
	}
	got, err = c.Auth.WebLoginURL(wecom.WebLoginRequest{RedirectURI: "https://api.3dept.com/login?next=/home&x=中", AgentID: 1000001, Lang: "en"})
	u, perr := url.Parse(got)
	if err != nil || perr != nil || u.Query().Get("redirect_uri") != "https://api.3dept.com/login?next=/home&x=中" ||
		u.Query().Get("agentid") != "1000001" || u.Query().Get("lang") != "en" || u.Query().Get("state") != "" {
		t.Errorf("WebLoginURL = %s, %v", got, err)
	}
}

// TestSignInURLsInvalid: a state that is not 1 to 128 bytes of a-zA-Z0-9
// (91022's rule, applied to both URLs), a redirect that is not an absolute
// http(s) URL, privateinfo or the web login without an agent id, an
// unknown scope or lang: refused with an ErrInvalidRequest.
func TestSignInURLsInvalid(t *testing.T) {
	t.Parallel()
	noAgent := exampleCorpClient(t)
	withAgent := exampleCorpClient(t, wecom.WithAgentID(1000002))
	ok := "https://api.3dept.com/cb"
	for name, err := range map[string]error{
		"state with @ (91019's example state)": second(withAgent.Auth.WebLoginURL(wecom.WebLoginRequest{RedirectURI: ok, State: "web_login@gyoss9"})),
		"state of 129 bytes":                   second(withAgent.Auth.AuthorizeURL(wecom.AuthorizeRequest{RedirectURI: ok, State: strings.Repeat("a", 129)})),
		"state with a space":                   second(withAgent.Auth.AuthorizeURL(wecom.AuthorizeRequest{RedirectURI: ok, State: "a b"})),
		"no redirect":                          second(withAgent.Auth.AuthorizeURL(wecom.AuthorizeRequest{})),
		"a relative redirect":                  second(withAgent.Auth.AuthorizeURL(wecom.AuthorizeRequest{RedirectURI: "/cb"})),
		"an ftp redirect":                      second(withAgent.Auth.AuthorizeURL(wecom.AuthorizeRequest{RedirectURI: "ftp://api.3dept.com/cb"})),
		"a redirect with a fragment":           second(withAgent.Auth.WebLoginURL(wecom.WebLoginRequest{RedirectURI: ok + "#top"})),
		"privateinfo without an agent":         second(noAgent.Auth.AuthorizeURL(wecom.AuthorizeRequest{RedirectURI: ok, Scope: wecom.ScopePrivateInfo})),
		"an unknown scope":                     second(withAgent.Auth.AuthorizeURL(wecom.AuthorizeRequest{RedirectURI: ok, Scope: "snsapi_userinfo"})),
		"web login without an agent":           second(noAgent.Auth.WebLoginURL(wecom.WebLoginRequest{RedirectURI: ok})),
		"an unknown lang":                      second(withAgent.Auth.WebLoginURL(wecom.WebLoginRequest{RedirectURI: ok, Lang: "fr"})),
	} {
		if !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if _, err := withAgent.Auth.AuthorizeURL(wecom.AuthorizeRequest{RedirectURI: ok, State: strings.Repeat("aZ9", 42) + "ab"}); err != nil {
		t.Errorf("a state of 128 bytes: %v", err)
	}
}
