package wecom_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/mock"
)

// installed returns a Suite fed a ticket, on a mock where corp corpID
// (with members) installed the suite, and the installation's auth code.
func installed(t *testing.T, corpID string) (*wecom.Suite, *mock.Server, string) {
	t.Helper()
	srv, base := suiteMock(t, mock.Config{}, "ticket-1")
	srv.AddUsers(corpID, "zhangsan", "lisi")
	s := newSuite(t, wecom.WithBaseURL(base))
	if err := s.SetTicket(context.Background(), "ticket-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	code, err := srv.Authorize(testSuiteID, corpID)
	if err != nil {
		t.Fatal(err)
	}
	return s, srv, code
}

// A corp's installation, end to end on the mock: the pre-auth code and its
// session, the auth code spent once for the permanent code (v2: no apps,
// no token), the corp's details (v2 without the QR code, v1 with it), its
// admins, its access token, and a Client of the corp on that token
// translating its members' ids.
func TestSuiteInstallation(t *testing.T) {
	t.Parallel()
	const corp = "wwcorpA"
	s, srv, code := installed(t, corp)
	ctx := context.Background()
	pre, expires, err := s.PreAuthCode(ctx)
	if err != nil || pre == "" || !expires.After(time.Now()) {
		t.Fatalf("PreAuthCode = %q, %v, %v", pre, expires, err)
	}
	if err := s.SetSessionInfo(ctx, pre, wecom.SessionInfo{AuthType: 1}); err != nil {
		t.Errorf("SetSessionInfo: %v", err)
	}
	auth, err := s.PermanentCode(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	if auth.PermanentCode == "" || auth.Corp.CorpID != corp || auth.User.OpenUserID == "" || auth.Agents != nil || auth.AccessToken.Value != "" {
		t.Errorf("PermanentCode (v2) = %+v", auth)
	}
	var ae *wecom.APIError
	if _, err := s.PermanentCode(ctx, code); !errors.As(err, &ae) || ae.Code != wecom.CodeInvalidAuthCode {
		t.Errorf("an auth code spent twice: %v, want 40078", err)
	}
	v2, err := s.AuthInfo(ctx, corp, auth.PermanentCode)
	if err != nil || v2.Corp.CorpID != corp || len(v2.Agents) != 1 || v2.Corp.WxQRCode != "" {
		t.Errorf("AuthInfo = %+v, %v", v2, err)
	}
	v1, err := s.AuthInfoV1(ctx, corp, auth.PermanentCode)
	if err != nil || v1.Corp.WxQRCode == "" || len(v1.Agents) != 1 {
		t.Errorf("AuthInfoV1 = %+v, %v", v1, err)
	}
	if _, err := s.AuthInfo(ctx, corp, "not-the-code"); !errors.As(err, &ae) || ae.Code != wecom.CodeInvalidPermanentCode {
		t.Errorf("AuthInfo with a wrong permanent code: %v, want 40084", err)
	}
	admins, err := s.Admins(ctx, corp, v2.Agents[0].AgentID)
	if err != nil || len(admins) != 1 || admins[0].OpenUserID != auth.User.OpenUserID {
		t.Errorf("Admins = %+v, %v", admins, err)
	}
	c := setup(t, wecom.WithBaseURL(started(t, srv)), wecom.WithTokenSource(s.CorpTokenSource(corp, auth.PermanentCode)), wecom.WithAgentID(v2.Agents[0].AgentID))
	ids, err := c.Users.ToOpenUserIDs(ctx, []string{"zhangsan", "lisi", "nobody"})
	if err != nil || len(ids.ByUserID) != 2 || ids.ByUserID["zhangsan"] == "" || len(ids.Invalid) != 1 || ids.Invalid[0] != "nobody" {
		t.Errorf("ToOpenUserIDs = %+v, %v", ids, err)
	}
	again, err := c.Users.ToOpenUserIDs(ctx, []string{"zhangsan"})
	if err != nil || again.ByUserID["zhangsan"] != ids.ByUserID["zhangsan"] {
		t.Errorf("ToOpenUserIDs again = %+v, %v: not the same open_userid", again, err)
	}
	news, err := c.Customers.NewExternalUserIDs(ctx, []string{"wmA", "wmB"})
	if err != nil || len(news) != 2 || news["wmA"] == "" || news["wmA"] == news["wmB"] {
		t.Errorf("NewExternalUserIDs = %v, %v", news, err)
	}
	cu, err := c.Customers.FromUnionID(ctx, wecom.UnionIDRequest{UnionID: "oU1", OpenID: "oO1", SubjectType: 1})
	if err != nil || cu.ExternalUserID == "" {
		t.Errorf("FromUnionID = %+v, %v", cu, err)
	}
	if _, err := c.Users.ToOpenUserIDs(ctx, make([]string, wecom.MaxIDsPerConversion+1)); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("ToOpenUserIDs of %d ids = %v, want ErrInvalidRequest", wecom.MaxIDsPerConversion+1, err)
	}
}

// v1 of get_permanent_code answers the corp's access token and its apps
// too; the token works for the corp's APIs.
func TestSuitePermanentCodeV1(t *testing.T) {
	t.Parallel()
	const corp = "wwcorpB"
	s, srv, code := installed(t, corp)
	auth, err := s.PermanentCodeV1(context.Background(), code)
	if err != nil {
		t.Fatal(err)
	}
	if auth.PermanentCode == "" || auth.Corp.CorpID != corp || len(auth.Agents) != 1 || auth.AccessToken.Value == "" || !auth.AccessToken.ExpiresAt.After(time.Now()) {
		t.Fatalf("PermanentCodeV1 = %+v", auth)
	}
	tok, err := s.CorpToken(context.Background(), corp, auth.PermanentCode)
	if err != nil || tok.Value != auth.AccessToken.Value {
		t.Errorf("CorpToken = %v, %v: not the token v1 answered", tok, err)
	}
	c := setup(t, wecom.WithBaseURL(started(t, srv)),
		wecom.WithTokenSource(wecom.TokenSourceFunc(func(context.Context) (wecom.Token, error) { return auth.AccessToken, nil })), wecom.WithAgentID(1))
	if _, err := c.Users.ToOpenUserIDs(context.Background(), []string{"zhangsan"}); err != nil {
		t.Errorf("a call with v1's token: %v", err)
	}
}

// The answers of get_permanent_code as WeCom documents them, v1
// (document/path/90603) and v2 (100776), read into one Authorization: v2
// moved the apps and the token out, which must leave them empty, not
// fail.
func TestPermanentCodeShapes(t *testing.T) {
	t.Parallel()
	const v1 = `{"errcode":0,"errmsg":"ok","access_token":"xxxxxx","expires_in":7200,"permanent_code":"xxxx",
	"dealer_corp_info":{"corpid":"xxxx","corp_name":"name"},
	"auth_corp_info":{"corpid":"xxxx","corp_name":"name","corp_type":"verified","corp_square_logo_url":"yyyyy","corp_user_max":50,
	"corp_full_name":"full_name","verified_end_time":1431775834,"subject_type":1,"corp_wxqrcode":"zzzzz","corp_scale":"1-50人","corp_industry":"IT服务","corp_sub_industry":"计算机软件/硬件/信息服务"},
	"auth_info":{"agent":[{"agentid":1,"name":"NAME","round_logo_url":"xxxxxx","square_logo_url":"yyyyyy","appid":1,"auth_mode":1,"is_customized_app":false,"auth_from_thirdapp":false,
	"privilege":{"level":1,"allow_party":[1,2,3],"allow_user":["zhansan","lisi"],"allow_tag":[1,2,3],"extra_party":[4,5,6],"extra_user":["wangwu"],"extra_tag":[4,5,6]},
	"shared_from":{"corpid":"wwyyyyy","share_type":1}}]},
	"auth_user_info":{"userid":"aa","open_userid":"xxxxxx","name":"xxx","avatar":"http://xxx"},
	"register_code_info":{"register_code":"1111","template_id":"tpl1111","state":"state001"},"state":"state001"}`
	const v2 = `{"errcode":0,"errmsg":"ok","permanent_code":"xxxx","auth_corp_info":{"corpid":"xxxx","corp_name":"name"},
	"auth_user_info":{"userid":"aa","open_userid":"xxxxxx","name":"xxx","avatar":"http://xxx"},
	"register_code_info":{"register_code":"1111","template_id":"tpl1111","state":"state001"},"state":"state001"}`
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch {
		case strings.HasSuffix(r.URL.Path, "/get_suite_token"):
			_, _ = io.WriteString(w, `{"suite_access_token":"sat","expires_in":7200}`)
		case strings.HasSuffix(r.URL.Path, "/v2/get_permanent_code"):
			_, _ = io.WriteString(w, v2)
		default:
			_, _ = io.WriteString(w, v1)
		}
	}))
	t.Cleanup(hs.Close)
	s := newSuite(t, wecom.WithBaseURL(hs.URL))
	if err := s.SetTicket(context.Background(), "ticket", time.Now()); err != nil {
		t.Fatal(err)
	}
	a1, err := s.PermanentCodeV1(context.Background(), "code")
	if err != nil {
		t.Fatal(err)
	}
	if a1.AccessToken.Value != "xxxxxx" || a1.Dealer == nil || a1.Dealer.CorpID != "xxxx" || a1.Corp.UserMax != 50 || a1.Corp.WxQRCode != "zzzzz" ||
		len(a1.Agents) != 1 || a1.Agents[0].SharedFrom == nil || len(a1.Agents[0].Privilege.ExtraUser) != 1 || a1.RegisterCode == nil || a1.State != "state001" {
		t.Errorf("v1 = %+v", a1)
	}
	a2, err := s.PermanentCode(context.Background(), "code")
	if err != nil {
		t.Fatal(err)
	}
	if a2.PermanentCode != "xxxx" || a2.Corp.Name != "name" || a2.User.OpenUserID != "xxxxxx" || a2.Agents != nil || a2.AccessToken != (wecom.Token{}) || a2.RegisterCode.Code != "1111" {
		t.Errorf("v2 = %+v", a2)
	}
}

// A provider sees a corp by an id of its own: the same every time, another
// for another corp.
func TestProviderOpenCorpID(t *testing.T) {
	t.Parallel()
	const provider, secret = "wwprovider02", "provider-secret-42"
	srv := newMock(t, mock.Config{})
	srv.AddProvider(provider, secret)
	p := newProvider(t, provider, secret, wecom.WithBaseURL(started(t, srv)))
	ctx := context.Background()
	a, err := p.OpenCorpID(ctx, "wwcorpA")
	if err != nil || a == "" || a == "wwcorpA" {
		t.Fatalf("OpenCorpID = %q, %v", a, err)
	}
	again, _ := p.OpenCorpID(ctx, "wwcorpA")
	other, _ := p.OpenCorpID(ctx, "wwcorpB")
	if again != a || other == a {
		t.Errorf("OpenCorpID: %q, then %q; another corp %q", a, again, other)
	}
}

// get_corp_token leaves errcode out of a success, as get_suite_token does:
// its answer without one is a success, and anything that is not a JSON
// object still is not.
func TestCorpTokenWithoutErrcode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body    string
		wantErr bool
	}{
		{`{"access_token":"corp-token","expires_in":7200}`, false},
		{`[]`, true},
		{`{"expires_in":7200}`, true},
	} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if strings.HasSuffix(r.URL.Path, "/get_suite_token") {
				_, _ = io.WriteString(w, `{"suite_access_token":"sat","expires_in":7200}`)
				return
			}
			_, _ = io.WriteString(w, tc.body)
		}))
		t.Cleanup(hs.Close)
		s := newSuite(t, wecom.WithBaseURL(hs.URL), wecom.WithRetryPolicy(wecom.RetryPolicy{MaxRetries: wecom.NoRetries}))
		if err := s.SetTicket(context.Background(), "ticket", time.Now()); err != nil {
			t.Fatal(err)
		}
		tok, err := s.CorpToken(context.Background(), "wwcorp", "code")
		var re *wecom.ResponseError
		if errors.As(err, &re) != tc.wantErr || (!tc.wantErr && tok.Value != "corp-token") {
			t.Errorf("%s: CorpToken = %v, %v", tc.body, tok, err)
		}
	}
}
