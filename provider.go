package wecom

import (
	"context"

	"github.com/wecomkit/wecom/catalog"
)

// initProvider makes the provider's credential.
func (p *pipeline) providerCredential() *credential {
	cfg := p.cfg.provider
	m := p.kept("provider access token", "wecom:provider:{"+cfg.corpID+"}", cfg.corpID, "{"+cfg.corpID+"}#fetch:provider", catalog.GetProviderToken, cfg.secret)
	m.param, m.refused = catalog.ProviderToken.String(), isTokenCode
	m.ask = func(ctx context.Context) (Token, error) {
		var out providerTokenAnswer
		body := map[string]string{"corpid": cfg.corpID, "provider_secret": cfg.secret}
		return p.askToken(ctx, &call{id: catalog.GetProviderToken, body: body, out: &out}, func() (string, int64) { return out.ProviderAccessToken, out.ExpiresIn })
	}
	return m
}

// providerTokenAnswer is get_provider_token's answer (no errcode on
// success).
type providerTokenAnswer struct {
	ProviderAccessToken string `json:"provider_access_token"`
	ExpiresIn           int64  `json:"expires_in"`
}

func (a *providerTokenAnswer) validate() error {
	return validExpiring("provider_access_token", a.ProviderAccessToken, a.ExpiresIn)
}

// LoginInfo is who logged in through the provider's web login.
type LoginInfo struct {
	// UserType: 1 the corp's creator, 2 an internal admin, 3 an external
	// admin, 4 a branch admin, 5 a member.
	UserType int `json:"usertype"`
	User     struct {
		UserID     string `json:"userid"`
		OpenUserID string `json:"open_userid"`
		Name       string `json:"name"`
		Avatar     string `json:"avatar"`
	} `json:"user_info"`
	Corp struct {
		CorpID string `json:"corpid"`
	} `json:"corp_info"`
}

// LoginInfo returns who logged in with authCode (service/get_login_info,
// document/path/91125), a code that serves once.
func (c *Client) LoginInfo(ctx context.Context, authCode string) (LoginInfo, error) {
	if authCode == "" {
		return LoginInfo{}, invalid("auth code", "empty")
	}
	var out LoginInfo
	err := c.p.perform(ctx, &call{id: catalog.GetLoginInfo, body: map[string]string{"auth_code": authCode}, out: &out})
	return out, err
}
