package wecom

import (
	"context"
	"errors"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// WithProvider gives the client a service provider (服务商): the calls
// whose endpoints carry a provider_access_token get one fetched with the
// provider's corp id and secret, kept as the access token is (the token
// store, one fetch at a time fleet-wide, refresh ahead, dropped when WeCom
// refuses it, redacted with the secret).
func WithProvider(providerCorpID, secret string) Option {
	return func(c *Client) error {
		if providerCorpID == "" || secret == "" {
			return invalid("provider", "the provider's corp id and secret are required")
		}
		m := &credential{name: "provider access token", key: "wecom:provider:{" + providerCorpID + "}",
			app: providerCorpID, secrets: []string{secret}, param: catalog.ProviderToken.String(), refused: isTokenCode}
		m.lock = func(ctx context.Context) (func(), error) {
			return c.lockKey(ctx, catalog.GetProviderToken.Path(), throttle.Request{Key: "{" + providerCorpID + "}#fetch:provider", Concurrency: 1, TTL: c.leaseTTL()})
		}
		m.ask = func(ctx context.Context) (Token, error) {
			var out providerTokenAnswer
			start := time.Now()
			body := map[string]string{"corpid": providerCorpID, "provider_secret": secret}
			if err := c.do(ctx, &call{id: catalog.GetProviderToken, body: body, out: &out}); err != nil {
				return Token{}, err
			}
			return Token{Value: out.ProviderAccessToken, ExpiresAt: start.Add(time.Duration(out.ExpiresIn) * time.Second)}, nil
		}
		c.provider = m
		return nil
	}
}

// providerTokenAnswer is get_provider_token's answer (no errcode on
// success).
type providerTokenAnswer struct {
	ProviderAccessToken string `json:"provider_access_token"`
	ExpiresIn           int64  `json:"expires_in"`
}

func (a *providerTokenAnswer) validate() error {
	if a.ProviderAccessToken == "" || a.ExpiresIn <= 0 {
		return errors.New("get_provider_token answered no provider_access_token or no positive expires_in")
	}
	return nil
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
	err := c.do(ctx, &call{id: catalog.GetLoginInfo, body: map[string]string{"auth_code": authCode}, out: &out})
	return out, err
}
