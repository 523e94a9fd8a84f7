package wecom

import (
	"context"
	"errors"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// A suite's installations (应用授权): the pre-authorization code a corp's
// admin installs with, the permanent code the installation gives, the
// corp's details, admins and access token.

// PreAuthCode returns a pre-authorization code of the suite
// (service/get_pre_auth_code, document/path/90601), valid until the time
// returned: the start of a corp's installation of the suite.
func (s *Suite) PreAuthCode(ctx context.Context) (string, time.Time, error) {
	var out preAuthCodeAnswer
	t, err := s.p.askToken(ctx, &call{id: catalog.GetPreAuthCode, out: &out}, func() (string, int64) { return out.PreAuthCode, out.ExpiresIn })
	return t.Value, t.ExpiresAt, err
}

type preAuthCodeAnswer struct {
	PreAuthCode string `json:"pre_auth_code"`
	ExpiresIn   int64  `json:"expires_in"`
}

func (a *preAuthCodeAnswer) validate() error {
	return validExpiring("pre_auth_code", a.PreAuthCode, a.ExpiresIn)
}

// SessionInfo is what an installation through a pre-authorization code
// may do (service/set_session_info, document/path/90602).
type SessionInfo struct {
	// AppIDs are the suite's apps the admin may install (empty: all).
	AppIDs []int `json:"appid,omitempty"`
	// AuthType is 0 for a real installation, 1 for a test one (of a suite
	// not yet online).
	AuthType int `json:"auth_type"`
}

// SetSessionInfo sets what the installation through preAuthCode may do.
func (s *Suite) SetSessionInfo(ctx context.Context, preAuthCode string, info SessionInfo) error {
	if preAuthCode == "" {
		return invalid("pre_auth_code", "empty")
	}
	_, err := answerOf[struct{}](ctx, s.p, catalog.SetSessionInfo, map[string]any{"pre_auth_code": preAuthCode, "session_info": info})
	return err
}

// AuthCorp is an authorizing corp. get_permanent_code v2 fills CorpID and
// Name only; get_auth_info fills the rest.
type AuthCorp struct {
	CorpID            string `json:"corpid"`
	Name              string `json:"corp_name"`
	Type              string `json:"corp_type"` // verified, unverified
	SquareLogoURL     string `json:"corp_square_logo_url"`
	UserMax           int    `json:"corp_user_max"`
	FullName          string `json:"corp_full_name"`
	VerifiedEndTime   int64  `json:"verified_end_time"`
	SubjectType       int    `json:"subject_type"` // 1 a company, 2 a government body, ...
	Scale             string `json:"corp_scale"`
	Industry          string `json:"corp_industry"`
	SubIndustry       string `json:"corp_sub_industry"`
	WxQRCode          string `json:"corp_wxqrcode"` // v1 get_auth_info only
	AgentMaxUserCount int    `json:"corp_agent_max"`
}

// AuthUser is the admin who installed the suite.
type AuthUser struct {
	UserID     string `json:"userid"`
	OpenUserID string `json:"open_userid"`
	Name       string `json:"name"`
	Avatar     string `json:"avatar"`
}

// AuthAgent is one of the suite's apps as a corp installed it.
type AuthAgent struct {
	AgentID          int            `json:"agentid"`
	Name             string         `json:"name"`
	RoundLogoURL     string         `json:"round_logo_url"`
	SquareLogoURL    string         `json:"square_logo_url"`
	AppID            int            `json:"appid"` // of old multi-app suites
	AuthMode         int            `json:"auth_mode"`
	IsCustomizedApp  bool           `json:"is_customized_app"`
	AuthFromThirdApp bool           `json:"auth_from_thirdapp"`
	Privilege        AgentPrivilege `json:"privilege"`
	// SharedFrom is the corp that shared the app (upstream/downstream),
	// when it was shared.
	SharedFrom *struct {
		CorpID    string `json:"corpid"`
		ShareType int    `json:"share_type"`
	} `json:"shared_from,omitempty"`
}

// AgentPrivilege is what an installed app may see.
type AgentPrivilege struct {
	Level      int      `json:"level"`
	AllowParty []int    `json:"allow_party"`
	AllowUser  []string `json:"allow_user"`
	AllowTag   []int    `json:"allow_tag"`
	ExtraParty []int    `json:"extra_party"`
	ExtraUser  []string `json:"extra_user"`
	ExtraTag   []int    `json:"extra_tag"`
}

// DealerCorp is the reseller through whom a corp installed the suite.
type DealerCorp struct {
	CorpID string `json:"corpid"`
	Name   string `json:"corp_name"`
}

// RegisterCode is the registration code a corp signed up with, when it did.
type RegisterCode struct {
	Code       string `json:"register_code"`
	TemplateID string `json:"template_id"`
	State      string `json:"state"`
}

// Authorization is a corp's installation of the suite, as
// get_permanent_code answers it. Keep PermanentCode: it is the corp's
// credential for the suite, as long as the installation lasts.
type Authorization struct {
	PermanentCode string        `json:"permanent_code"`
	Corp          AuthCorp      `json:"auth_corp_info"`
	User          AuthUser      `json:"auth_user_info"`
	Dealer        *DealerCorp   `json:"dealer_corp_info,omitempty"`
	RegisterCode  *RegisterCode `json:"register_code_info,omitempty"`
	// State is the state of the installation link or QR code.
	State string `json:"state"`
	// Agents are the apps installed: from v1 only (v2 leaves them to
	// AuthInfo).
	Agents []AuthAgent `json:"-"`
	// AccessToken is the corp's access token: from v1 only (v2 leaves it
	// to CorpToken).
	AccessToken Token `json:"-"`
}

// authorizationAnswer is get_permanent_code's answer, v1 or v2: v2 moved
// auth_info and the corp's token out of it.
type authorizationAnswer struct {
	Authorization
	Info        authInfoAgents `json:"auth_info"`
	AccessToken string         `json:"access_token"`
	ExpiresIn   int64          `json:"expires_in"`
}

type authInfoAgents struct {
	Agent []AuthAgent `json:"agent"`
}

func (a *authorizationAnswer) validate() error {
	if a.PermanentCode == "" || a.Authorization.Corp.CorpID == "" {
		return errors.New("no permanent_code or no auth_corp_info.corpid")
	}
	return nil
}

// PermanentCode spends authCode, the code of a corp's installation (its
// create_auth callback's AuthCode, or the installation's redirect), for
// the corp's permanent code (service/v2/get_permanent_code,
// document/path/100776). WeCom's v2 answers the corp's id and name, the
// admin, and no apps nor token: AuthInfo and CorpToken give those. A code
// serves once: a call whose answer was lost is not repeated (see
// ErrMaybeDone).
func (s *Suite) PermanentCode(ctx context.Context, authCode string) (*Authorization, error) {
	return s.permanentCode(ctx, catalog.GetPermanentCodeV2, authCode)
}

// PermanentCodeV1 is PermanentCode through service/get_permanent_code
// (document/path/90603), whose answer also holds the apps installed and
// the corp's access token.
func (s *Suite) PermanentCodeV1(ctx context.Context, authCode string) (*Authorization, error) {
	return s.permanentCode(ctx, catalog.GetPermanentCode, authCode)
}

func (s *Suite) permanentCode(ctx context.Context, id catalog.ID, authCode string) (*Authorization, error) {
	if authCode == "" {
		return nil, invalid("auth_code", "empty")
	}
	start := time.Now()
	out, err := answerOf[authorizationAnswer](ctx, s.p, id, map[string]string{"auth_code": authCode})
	if err != nil {
		return nil, err
	}
	a := out.Authorization
	a.Agents = out.Info.Agent
	if out.AccessToken != "" {
		a.AccessToken = Token{Value: out.AccessToken, ExpiresAt: start.Add(time.Duration(out.ExpiresIn) * time.Second)}
	}
	return &a, nil
}

// AuthInfo is an authorizing corp's details and the apps it installed.
type AuthInfo struct {
	Corp   AuthCorp    `json:"auth_corp_info"`
	Dealer *DealerCorp `json:"dealer_corp_info,omitempty"`
	Agents []AuthAgent `json:"-"`
}

type authInfoAnswer struct {
	AuthInfo
	Info authInfoAgents `json:"auth_info"`
}

func (a *authInfoAnswer) validate() error {
	if a.Corp.CorpID == "" {
		return errors.New("no auth_corp_info.corpid")
	}
	return nil
}

// corpCode is the body of the calls naming a corp by its permanent code.
func corpCode(corpID, permanentCode string) (map[string]string, error) {
	if corpID == "" || permanentCode == "" {
		return nil, invalid("auth_corpid and permanent_code", "both required")
	}
	return map[string]string{"auth_corpid": corpID, "permanent_code": permanentCode}, nil
}

// AuthInfo reads the details of corp corpID and the apps it installed
// (service/v2/get_auth_info, document/path/100795).
func (s *Suite) AuthInfo(ctx context.Context, corpID, permanentCode string) (*AuthInfo, error) {
	return s.authInfo(ctx, catalog.GetAuthInfoV2, corpID, permanentCode)
}

// AuthInfoV1 is AuthInfo through service/get_auth_info
// (document/path/90604), which also answers the corp's WeChat plugin QR
// code (AuthCorp.WxQRCode).
func (s *Suite) AuthInfoV1(ctx context.Context, corpID, permanentCode string) (*AuthInfo, error) {
	return s.authInfo(ctx, catalog.GetAuthInfo, corpID, permanentCode)
}

func (s *Suite) authInfo(ctx context.Context, id catalog.ID, corpID, permanentCode string) (*AuthInfo, error) {
	body, err := corpCode(corpID, permanentCode)
	if err != nil {
		return nil, err
	}
	out, err := answerOf[authInfoAnswer](ctx, s.p, id, body)
	if err != nil {
		return nil, err
	}
	out.AuthInfo.Agents = out.Info.Agent
	return &out.AuthInfo, nil
}

// CorpToken fetches the access token of corp corpID for the suite
// (service/get_corp_token, document/path/90605). A Client of the corp
// keeps and shares it with CorpTokenSource.
func (s *Suite) CorpToken(ctx context.Context, corpID, permanentCode string) (Token, error) {
	body, err := corpCode(corpID, permanentCode)
	if err != nil {
		return Token{}, err
	}
	var out tokenAnswer
	return s.p.askToken(ctx, &call{id: catalog.GetCorpToken, body: body, out: &out}, func() (string, int64) { return out.AccessToken, out.ExpiresIn })
}

// CorpTokenSource is the token source of a Client of corp corpID that
// calls as the suite: New(corpID, "", WithTokenSource(suite.CorpTokenSource(corpID, code)), WithAgentID(agentID)).
// The Client keeps the token in its token store, shared by the fleet, and
// asks again when WeCom refuses it.
func (s *Suite) CorpTokenSource(corpID, permanentCode string) TokenSource {
	return TokenSourceFunc(func(ctx context.Context) (Token, error) { return s.CorpToken(ctx, corpID, permanentCode) })
}

// Admin is an admin of an app of an authorizing corp.
type Admin struct {
	UserID     string `json:"userid"`
	OpenUserID string `json:"open_userid"`
	// AuthType is 0 for a viewer, 1 for a manager.
	AuthType int `json:"auth_type"`
}

// Admins lists the admins of app agentID of corp corpID
// (service/get_admin_list, document/path/90606).
func (s *Suite) Admins(ctx context.Context, corpID string, agentID int) ([]Admin, error) {
	if corpID == "" || agentID <= 0 {
		return nil, invalid("auth_corpid and agentid", "both required")
	}
	out, err := answerOf[struct {
		Admin []Admin `json:"admin"`
	}](ctx, s.p, catalog.GetAdminList, map[string]any{"auth_corpid": corpID, "agentid": agentID})
	if err != nil {
		return nil, err
	}
	return out.Admin, nil
}
