package wecom

import (
	"context"
	"errors"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// initSuite makes the suite's credential.
func (p *pipeline) suiteCredential() *credential {
	cfg := p.cfg.suite
	m := p.kept("suite access token", "wecom:suite:{"+cfg.id+"}", cfg.id, "{"+cfg.id+"}#fetch:suite", catalog.GetSuiteToken, cfg.secret)
	m.param = catalog.SuiteToken.String()
	m.refused = func(code int) bool {
		// WeCom answers a token of the wrong kind with 40014 too
		return isSuiteTokenCode(code) || code == CodeInvalidAccessToken
	}
	m.ask = func(ctx context.Context) (Token, error) {
		ticket, err := cfg.ticket(ctx)
		m.mu.Lock()
		m.remember(ticket) // a ticket is a secret too
		m.mu.Unlock()
		if err != nil || ticket == "" {
			return Token{}, errors.Join(invalid("suite ticket", "none to fetch the suite access token with"), p.redactErr(err))
		}
		var out suiteTokenAnswer
		body := map[string]string{"suite_id": cfg.id, "suite_secret": cfg.secret, "suite_ticket": ticket}
		return p.askToken(ctx, &call{id: catalog.GetSuiteToken, body: body, out: &out}, func() (string, int64) { return out.SuiteAccessToken, out.ExpiresIn })
	}
	return m
}

// suiteTokenAnswer is get_suite_token's answer (no errcode on success).
type suiteTokenAnswer struct {
	SuiteAccessToken string `json:"suite_access_token"`
	ExpiresIn        int64  `json:"expires_in"`
}

func (a *suiteTokenAnswer) validate() error {
	return validExpiring("suite_access_token", a.SuiteAccessToken, a.ExpiresIn)
}

// PreAuthCode returns a pre-authorization code of the client's suite
// (service/get_pre_auth_code, document/path/90601), valid until the time
// returned: the start of a corp's installation of the suite.
func (c *Client) PreAuthCode(ctx context.Context) (string, time.Time, error) {
	var out struct {
		PreAuthCode string `json:"pre_auth_code"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	start := time.Now()
	if err := c.p.perform(ctx, &call{id: catalog.GetPreAuthCode, out: &out}); err != nil {
		return "", time.Time{}, err
	}
	return out.PreAuthCode, start.Add(time.Duration(out.ExpiresIn) * time.Second), nil
}
