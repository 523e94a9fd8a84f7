package wecom

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// AuthService signs people in (身份验证): it builds the URLs that send a
// browser to WeCom's OAuth page (inside WeCom) or to its web login (a QR
// code or the desktop app, in any browser), and tells, from the code WeCom
// sends back to the redirect URI, who signed in.
//
// The flow: redirect the browser to AuthorizeURL or WebLoginURL with a
// fresh State kept in the session; WeCom redirects it to RedirectURI with
// ?code=CODE&state=STATE; check the state, then call SignIn with the code
// within five minutes. A code serves once. A member who consented to
// ScopePrivateInfo comes with a UserTicket, for PrivateInfo within 1,800
// seconds.
type AuthService service

// OAuthScope is what a sign-in through AuthorizeURL asks of the member
// (the scope parameter, document/path/91022).
type OAuthScope string

// The scopes of AuthorizeURL.
const (
	// ScopeBase signs in without asking (静默授权): SignIn answers who it
	// is, with no user ticket.
	ScopeBase OAuthScope = "snsapi_base"
	// ScopePrivateInfo asks the member's consent (手动授权) to the sensitive
	// fields of PrivateInfo: SignIn answers a UserTicket when the member is
	// in the app's visible range. It needs the app's agent id.
	ScopePrivateInfo OAuthScope = "snsapi_privateinfo"
)

// The bounds of a sign-in's input (document/path/91022 and 91023).
const (
	// MaxStateBytes is the longest State WeCom takes back to the redirect
	// URI: 128 bytes of a-z, A-Z and 0-9.
	MaxStateBytes = 128
	// MaxSignInCodeBytes is the longest code WeCom sends: 512 bytes.
	MaxSignInCodeBytes = 512
)

// The pages a sign-in starts from.
const (
	authorizeBase = "https://open.weixin.qq.com/connect/oauth2/authorize"
	webLoginBase  = "https://login.work.weixin.qq.com/wwlogin/sso/login"
)

// AuthorizeRequest describes an OAuth sign-in inside WeCom (构造网页授权链接,
// document/path/91022).
type AuthorizeRequest struct {
	// RedirectURI is where WeCom sends the browser back, with ?code=&state=:
	// an absolute http or https URL on a domain the app trusts (可信域名;
	// SignIn answers 50001 otherwise).
	RedirectURI string
	// Scope is ScopeBase (the default) or ScopePrivateInfo.
	Scope OAuthScope
	// State comes back unchanged with the code: at most MaxStateBytes of
	// a-z, A-Z and 0-9. Give each sign-in a fresh one and check it, against
	// forged redirects (CSRF).
	State string
	// AgentID is the app's id; 0 takes the client's (WithAgentID). WeCom
	// requires it for ScopePrivateInfo (without it, it treats the sign-in as
	// ScopeBase) and advises it always; the URL leaves it out when neither
	// is set.
	AgentID int
}

// AuthorizeURL returns the URL of WeCom's OAuth page for req: appid (the
// client's corp id), redirect_uri (URL-encoded), response_type=code, scope,
// state, agentid, and the #wechat_redirect fragment WeCom's app looks for.
// It calls nothing; its error is a *ValidationError.
func (s *AuthService) AuthorizeURL(req AuthorizeRequest) (string, error) {
	scope := req.Scope
	if scope == "" {
		scope = ScopeBase
	}
	agentID := s.agentID(req.AgentID)
	var errs []error
	switch {
	case scope != ScopeBase && scope != ScopePrivateInfo:
		errs = append(errs, invalid("scope", "%q is not %s or %s", scope, ScopeBase, ScopePrivateInfo))
	case scope == ScopePrivateInfo && agentID <= 0:
		errs = append(errs, invalid("agent id", "%s needs the app's agent id: AuthorizeRequest.AgentID or WithAgentID", scope))
	}
	errs = append(errs, validRedirect(req.RedirectURI), validState(req.State))
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	q := []string{
		"appid=" + url.QueryEscape(s.p.cfg.corpID),
		"redirect_uri=" + url.QueryEscape(req.RedirectURI),
		"response_type=code",
		"scope=" + string(scope),
		"state=" + req.State,
	}
	if agentID > 0 {
		q = append(q, "agentid="+strconv.Itoa(agentID))
	}
	return authorizeBase + "?" + strings.Join(q, "&") + "#wechat_redirect", nil
}

// WebLoginRequest describes a sign-in through WeCom's web login (企业微信Web
// 登录, the login page of a self-built app: login_type CorpApp,
// document/path/98151 and 98152), for browsers outside WeCom.
type WebLoginRequest struct {
	// RedirectURI is where WeCom sends the browser back, with ?code=&state=:
	// an absolute http or https URL on the app's trusted domain.
	RedirectURI string
	// State comes back unchanged with the code: at most MaxStateBytes of
	// a-z, A-Z and 0-9, as for AuthorizeRequest.
	State string
	// AgentID is the app's id; 0 takes the client's (WithAgentID). The web
	// login of a self-built app requires it.
	AgentID int
	// Lang is the page's language: "zh", "en", or empty for the browser's.
	Lang string
}

// WebLoginURL returns the URL of WeCom's web login page for req:
// login_type=CorpApp, appid (the client's corp id), agentid, redirect_uri
// (URL-encoded), state and lang. The code it brings back is read by SignIn,
// as an OAuth sign-in's. It calls nothing; its error is a *ValidationError.
func (s *AuthService) WebLoginURL(req WebLoginRequest) (string, error) {
	agentID := s.agentID(req.AgentID)
	var errs []error
	if agentID <= 0 {
		errs = append(errs, invalid("agent id", "the web login needs the app's agent id: WebLoginRequest.AgentID or WithAgentID"))
	}
	if req.Lang != "" && req.Lang != "zh" && req.Lang != "en" {
		errs = append(errs, invalid("lang", "%q is not zh or en", req.Lang))
	}
	errs = append(errs, validRedirect(req.RedirectURI), validState(req.State))
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	q := []string{
		"login_type=CorpApp",
		"appid=" + url.QueryEscape(s.p.cfg.corpID),
		"agentid=" + strconv.Itoa(agentID),
		"redirect_uri=" + url.QueryEscape(req.RedirectURI),
		"state=" + req.State,
	}
	if req.Lang != "" {
		q = append(q, "lang="+req.Lang)
	}
	return webLoginBase + "?" + strings.Join(q, "&"), nil
}

// agentID is given, or else the client's.
func (s *AuthService) agentID(given int) int {
	if given != 0 {
		return given
	}
	return s.p.cfg.agentID
}

// validRedirect checks a redirect URI: absolute, http or https, with a
// host and no fragment.
func validRedirect(uri string) error {
	u, err := url.Parse(uri)
	switch {
	case uri == "":
		return invalid("redirect uri", "empty")
	case err != nil || !u.IsAbs() || u.Host == "":
		return invalid("redirect uri", "%q is not an absolute URL", uri)
	case u.Scheme != "http" && u.Scheme != "https":
		return invalid("redirect uri", "%q is not http or https", uri)
	case strings.Contains(uri, "#"):
		return invalid("redirect uri", "%q has a fragment, which WeCom's code and state would follow", uri)
	}
	return nil
}

// validState checks a state: at most MaxStateBytes of a-z, A-Z and 0-9.
func validState(state string) error {
	if len(state) > MaxStateBytes {
		return invalid("state", "%d bytes, at most %d", len(state), MaxStateBytes)
	}
	for i := 0; i < len(state); i++ {
		if c := state[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return invalid("state", "byte %d is not a-z, A-Z or 0-9", i)
		}
	}
	return nil
}

// SignIn is who a sign-in code signed in (auth/getuserinfo): a member of
// the corp, or a visitor who is not one. Exactly one of Member and Visitor
// is set; an answer of WeCom's that is neither, or both, is an error, never
// a SignIn. Branch on them:
//
//	switch {
//	case si.Member != nil:
//		// si.Member.UserID
//	case si.Visitor != nil:
//		// si.Visitor.OpenID
//	}
type SignIn struct {
	Member  *MemberSignIn
	Visitor *VisitorSignIn
}

// MemberSignIn is a member of the corp who signed in, whether or not in the
// app's visible range.
type MemberSignIn struct {
	// UserID is the member's userid; a member of a linked corp (互联企业,
	// 上下游) is "corpid/userid".
	UserID string
	// Ticket is set when the sign-in asked ScopePrivateInfo and the member
	// is in the app's visible range: PrivateInfo reads the member's
	// sensitive fields with it, for 1,800 seconds.
	Ticket UserTicket
}

// VisitorSignIn is a visitor who is not a member of the corp.
type VisitorSignIn struct {
	// OpenID names the visitor within the corp (at most 64 bytes).
	OpenID string
	// ExternalUserID is set when the visitor is a customer of the corp
	// (客户) followed by a member in the app's visible range.
	ExternalUserID string
}

// UserTicket is a member's user_ticket (at most 512 bytes, valid 1,800
// seconds): a credential. It prints as "REDACTED" (String); string(t) is
// its value.
type UserTicket string

// String hides the ticket, so that printing a MemberSignIn does not show it.
func (UserTicket) String() string { return redactedToken }

// How long WeCom's sign-in credentials serve (document/path/91023).
const (
	// SignInCodeTTL is how long a sign-in code serves, once.
	SignInCodeTTL = 5 * time.Minute
	// UserTicketTTL is how long a UserTicket serves.
	UserTicketTTL = 1800 * time.Second
)

// signInAnswer is auth/getuserinfo's answer: a member's or a visitor's.
type signInAnswer struct {
	UserID         string `json:"userid"`
	UserTicket     string `json:"user_ticket"`
	OpenID         string `json:"openid"`
	ExternalUserID string `json:"external_userid"`
}

func (a *signInAnswer) validate() error {
	switch {
	case a.UserID == "" && a.OpenID == "":
		return errors.New("neither a member's userid nor a visitor's openid")
	case a.UserID != "" && a.OpenID != "":
		return errors.New("both a member's userid and a visitor's openid")
	}
	return nil
}

// SignIn tells who signed in with code, the code WeCom sent the redirect
// URI of AuthorizeURL or WebLoginURL (auth/getuserinfo,
// document/path/91023). A code serves once and for five minutes: a used,
// expired or unknown one gets an *APIError of CodeInvalidOAuthCode (send
// the browser to sign in again), and a call whose answer was lost is not
// repeated (its error matches ErrMaybeDone). WeCom exempts these calls from
// its frequency limits, so the client counts them in no window. The code is
// a credential: no error or log line of the SDK shows it.
func (s *AuthService) SignIn(ctx context.Context, code string) (SignIn, error) {
	switch {
	case code == "":
		return SignIn{}, invalid("code", "empty")
	case len(code) > MaxSignInCodeBytes:
		return SignIn{}, invalid("code", "%d bytes, at most %d", len(code), MaxSignInCodeBytes)
	}
	var out signInAnswer
	if err := s.p.perform(ctx, &call{id: catalog.AuthGetUserInfo, query: url.Values{"code": {code}}, out: &out}); err != nil {
		return SignIn{}, err
	}
	if out.UserID != "" {
		return SignIn{Member: &MemberSignIn{UserID: out.UserID, Ticket: UserTicket(out.UserTicket)}}, nil
	}
	return SignIn{Visitor: &VisitorSignIn{OpenID: out.OpenID, ExternalUserID: out.ExternalUserID}}, nil
}

// PrivateInfo is a member's sensitive fields (敏感信息), as the member let
// the app read them by consenting to ScopePrivateInfo
// (auth/getuserdetail, document/path/95833). The admin chooses, in the
// app's settings, which fields an app may ask; a field the member did not
// consent to comes back empty (Gender "0", Avatar the default picture).
// Third-party apps never get Mobile, Email, BizMail or Address.
type PrivateInfo struct {
	UserID string `json:"userid"`
	// Gender is a string here, as WeCom sends it: "0" unknown, "1" male,
	// "2" female.
	Gender string `json:"gender"`
	// Avatar is the URL of the member's picture.
	Avatar string `json:"avatar"`
	// QRCode is the URL of the member's QR code (员工个人二维码), which a
	// customer scans to add the member.
	QRCode  string `json:"qr_code"`
	Mobile  string `json:"mobile"`
	Email   string `json:"email"`
	BizMail string `json:"biz_mail"`
	Address string `json:"address"`
}

func (p *PrivateInfo) validate() error {
	if p.UserID == "" {
		return errors.New("no userid")
	}
	return nil
}

// PrivateInfo reads the sensitive fields of the member whose sign-in
// answered ticket (MemberSignIn.Ticket), within its 1,800 seconds
// (auth/getuserdetail, document/path/95833). The member must be in the
// app's visible range. The ticket travels in the body, never in the URL,
// and no error or log line of the SDK shows it.
func (s *AuthService) PrivateInfo(ctx context.Context, ticket UserTicket) (PrivateInfo, error) {
	if ticket == "" {
		return PrivateInfo{}, invalid("user ticket", "empty")
	}
	var out PrivateInfo
	err := s.p.perform(ctx, &call{id: catalog.AuthGetUserDetail, body: map[string]string{"user_ticket": string(ticket)}, out: &out})
	if err != nil {
		return PrivateInfo{}, err
	}
	return out, nil
}
