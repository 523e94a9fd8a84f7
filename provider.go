package wecom

import (
	"context"
	"errors"

	"github.com/wecomkit/wecom/catalog"
)

// Provider calls the APIs of a service provider (服务商) carrying its
// provider_access_token, which only a Provider holds: a call of another
// kind fails with a *TokenKindError before anything is sent. The token is
// fetched with the provider's corp id and secret and kept as a Client's
// access token is (the token store, one fetch at a time fleet-wide,
// refreshed ahead, dropped when WeCom refuses it, redacted with the
// secret). Its calls count in the limits under the provider's corp id. A
// Provider is safe for concurrent use and starts no goroutine until it
// calls.
type Provider struct {
	p *pipeline
}

// NewProvider returns the Provider of corp providerCorpID and its provider
// secret (from the provider's admin console). The options are the
// Client's, as for NewSuite.
func NewProvider(providerCorpID, secret string, opts ...Option) (*Provider, error) {
	if err := validID("provider corp id", providerCorpID); err != nil {
		return nil, err
	}
	if secret == "" {
		return nil, invalid("provider secret", "empty")
	}
	cfg, err := newConfig(providerCorpID, "", opts)
	if err != nil {
		return nil, err
	}
	cfg.provider = &providerConfig{corpID: providerCorpID, secret: secret}
	p, err := newPipeline(cfg)
	if err != nil {
		return nil, err
	}
	return &Provider{p: p}, nil
}

// Drain waits until every attempt of the provider that may outlive its
// caller has ended, or until ctx ends, as Client.Drain.
func (pr *Provider) Drain(ctx context.Context) error { return pr.p.background.wait(ctx) }

// providerCredential makes the provider's token.
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
	// Agents are the apps the user administers (an admin's login).
	Agents []struct {
		AgentID int `json:"agentid"`
		// AuthType is 0 for a viewer, 1 for a manager.
		AuthType int `json:"auth_type"`
	} `json:"agent"`
	// AuthInfo holds the departments a branch admin manages.
	AuthInfo struct {
		Departments []struct {
			ID       int  `json:"id"`
			Writable bool `json:"writable"`
		} `json:"department"`
	} `json:"auth_info"`
}

func (l *LoginInfo) validate() error {
	if l.Corp.CorpID == "" {
		return errors.New("no corp_info.corpid")
	}
	return nil
}

// LoginInfo returns who logged in with authCode (service/get_login_info,
// document/path/91125), a code that serves once.
func (pr *Provider) LoginInfo(ctx context.Context, authCode string) (*LoginInfo, error) {
	if authCode == "" {
		return nil, invalid("auth code", "empty")
	}
	return answerOf[LoginInfo](ctx, pr.p, catalog.GetLoginInfo, map[string]string{"auth_code": authCode})
}

// OpenCorpID translates corpID, a corp's own id, into the id the provider
// sees it by (service/corpid_to_opencorpid, document/path/95604), for a
// corp that installed one of the provider's suites.
func (pr *Provider) OpenCorpID(ctx context.Context, corpID string) (string, error) {
	if corpID == "" {
		return "", invalid("corpid", "empty")
	}
	out, err := answerOf[openCorpIDAnswer](ctx, pr.p, catalog.CorpIDToOpenCorpID, map[string]string{"corpid": corpID})
	if err != nil {
		return "", err
	}
	return out.OpenCorpID, nil
}

type openCorpIDAnswer struct {
	OpenCorpID string `json:"open_corpid"`
}

func (a *openCorpIDAnswer) validate() error {
	if a.OpenCorpID == "" {
		return errors.New("no open_corpid")
	}
	return nil
}
