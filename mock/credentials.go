package mock

import (
	"encoding/json"
	"time"
)

// The credentials other than the access token: the JS-SDK tickets of a corp
// and of its apps, and third-party suites with their suite tokens.

// Error codes of the suite APIs.
const (
	codeInvalidSuiteToken  = 40082
	codeInvalidSuiteID     = 40083
	codeInvalidSuiteTicket = 40085
	codeSuiteTokenExpired  = 42009
)

// suite is a third-party suite the Server knows.
type suite struct {
	id, secret, ticket string
	token              *token // the current suite token, nil before one
}

// AddSuite registers a third-party suite with its secret and the
// suite_ticket get_suite_token accepts (SetSuiteTicket changes it).
func (s *Server) AddSuite(suiteID, secret, ticket string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.suites[suiteID] = &suite{id: suiteID, secret: secret, ticket: ticket}
}

// SetSuiteTicket makes ticket the one suite_ticket get_suite_token accepts
// for suiteID, as WeCom's push of a new one does.
func (s *Server) SetSuiteTicket(suiteID, ticket string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.suites[suiteID]; st != nil {
		st.ticket = ticket
	}
}

type suiteTokenRequest struct {
	SuiteID     string `json:"suite_id"`
	SuiteSecret string `json:"suite_secret"`
	SuiteTicket string `json:"suite_ticket"`
}

type suiteTokenAnswer struct {
	SuiteAccessToken string `json:"suite_access_token"`
	ExpiresIn        int    `json:"expires_in"`
}

// getSuiteToken answers get_suite_token: the suite's current token, or a
// new one, without errcode on success as WeCom does.
func (s *Server) getSuiteToken(body []byte, ip string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var req suiteTokenRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return s.errorAnswer(errf(codeDataFormat, "data format error"), ip, now, true)
	}
	st := s.suites[req.SuiteID]
	switch {
	case st == nil || req.SuiteSecret != st.secret:
		return s.errorAnswer(errf(codeInvalidSuiteID, "invalid suite id or secret"), ip, now, true)
	case req.SuiteTicket != st.ticket:
		return s.errorAnswer(errf(codeInvalidSuiteTicket, "invalid suite ticket"), ip, now, true)
	}
	if st.token == nil || !now.Before(st.token.expires) {
		st.token = &token{value: newTokenValue(), corp: "suite:" + st.id, app: st.id, expires: now.Add(s.tokenTTL)}
		s.suiteTokens[st.token.value] = st.token
		s.corpLocked(st.token.corp)
	}
	return mustMarshal(suiteTokenAnswer{SuiteAccessToken: st.token.value, ExpiresIn: int(st.token.expires.Sub(now) / time.Second)})
}

// checkSuiteToken is checkToken of a suite_access_token: the suite's own
// state stands for the corp.
func (s *Server) checkSuiteToken(value string, now time.Time) (*corp, *token, *apiError) {
	tok := s.suiteTokens[value]
	switch {
	case tok == nil:
		return nil, nil, errf(codeInvalidSuiteToken, "invalid suite_access_token")
	case !now.Before(tok.expires):
		return nil, nil, errf(codeSuiteTokenExpired, "suite_access_token expired")
	}
	return s.corpLocked(tok.corp), tok, nil
}

// InvalidateSuiteTokens makes every suite token issued so far invalid.
func (s *Server) InvalidateSuiteTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.suiteTokens = make(map[string]*token)
	for _, st := range s.suites {
		st.token = nil
	}
}

type preAuthCodeAnswer struct {
	status
	PreAuthCode string `json:"pre_auth_code"`
	ExpiresIn   int    `json:"expires_in"`
}

// preAuthCode answers get_pre_auth_code.
func (c *corp) preAuthCode(*input) (any, *apiError) {
	return preAuthCodeAnswer{status: okStatus("ok"), PreAuthCode: "pre" + newTokenValue()[:20], ExpiresIn: 1200}, nil
}

type ticketAnswer struct {
	status
	Ticket    string `json:"ticket"`
	ExpiresIn int    `json:"expires_in"`
}

// jsapiTicket answers get_jsapi_ticket and ticket/get: a ticket valid two
// hours, the same until then.
func (c *corp) jsapiTicket(in *input) (any, *apiError) {
	kind := "jsapi"
	if in.query.Has("type") {
		if in.query.Get("type") != "agent_config" {
			return nil, errf(codeInvalidParam, "invalid type")
		}
		kind = "agent:" + in.app
	}
	if c.tickets == nil {
		c.tickets = make(map[string]*token)
	}
	t := c.tickets[kind]
	if t == nil || !in.now.Before(t.expires) {
		t = &token{value: newTokenValue()[:40], expires: in.now.Add(2 * time.Hour)}
		c.tickets[kind] = t
	}
	return ticketAnswer{status: okStatus("ok"), Ticket: t.value, ExpiresIn: int(t.expires.Sub(in.now) / time.Second)}, nil
}

// provider is a service provider the Server knows.
type provider struct {
	corpID, secret string
	token          *token
}

// AddProvider registers a service provider: its corp id and provider
// secret.
func (s *Server) AddProvider(corpID, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.providers[corpID] = &provider{corpID: corpID, secret: secret}
}

// AddLoginCode makes authCode a web login of userID in corpID through the
// provider providerCorpID, which its get_login_info answers once.
func (s *Server) AddLoginCode(providerCorpID, authCode, corpID, userID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked("provider:" + providerCorpID)
	if c.logins == nil {
		c.logins = make(map[string][2]string)
	}
	c.logins[authCode] = [2]string{corpID, userID}
}

// InvalidateProviderTokens makes every provider token issued so far
// invalid.
func (s *Server) InvalidateProviderTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.providerTokens = make(map[string]*token)
	for _, p := range s.providers {
		p.token = nil
	}
}

type providerTokenAnswer struct {
	ProviderAccessToken string `json:"provider_access_token"`
	ExpiresIn           int    `json:"expires_in"`
}

// getProviderToken answers get_provider_token, without errcode on success.
func (s *Server) getProviderToken(body []byte, ip string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var req struct {
		CorpID string `json:"corpid"`
		Secret string `json:"provider_secret"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return s.errorAnswer(errf(codeDataFormat, "data format error"), ip, now, true)
	}
	p := s.providers[req.CorpID]
	if p == nil || req.Secret != p.secret {
		return s.errorAnswer(errf(codeInvalidSecret, "invalid provider secret"), ip, now, true)
	}
	if p.token == nil || !now.Before(p.token.expires) {
		p.token = &token{value: newTokenValue(), corp: "provider:" + p.corpID, app: p.corpID, expires: now.Add(s.tokenTTL)}
		s.providerTokens[p.token.value] = p.token
		s.corpLocked(p.token.corp)
	}
	return mustMarshal(providerTokenAnswer{ProviderAccessToken: p.token.value, ExpiresIn: int(p.token.expires.Sub(now) / time.Second)})
}

// checkProviderToken is checkToken of a provider_access_token.
func (s *Server) checkProviderToken(value string, now time.Time) (*corp, *token, *apiError) {
	tok := s.providerTokens[value]
	switch {
	case tok == nil:
		return nil, nil, errf(codeInvalidToken, "invalid provider_access_token")
	case !now.Before(tok.expires):
		return nil, nil, errf(codeTokenExpired, "provider_access_token expired")
	}
	return s.corpLocked(tok.corp), tok, nil
}

type loginInfoAnswer struct {
	status
	UserType int `json:"usertype"`
	UserInfo struct {
		UserID string `json:"userid"`
	} `json:"user_info"`
	CorpInfo struct {
		CorpID string `json:"corpid"`
	} `json:"corp_info"`
}

// loginInfo answers get_login_info for a code AddLoginCode made, once.
func (c *corp) loginInfo(in *input) (any, *apiError) {
	var req struct {
		AuthCode string `json:"auth_code"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	who, ok := c.logins[req.AuthCode]
	if !ok {
		return nil, errf(codeInvalidParam, "invalid auth_code")
	}
	delete(c.logins, req.AuthCode)
	a := loginInfoAnswer{status: okStatus("ok"), UserType: 5}
	a.UserInfo.UserID, a.CorpInfo.CorpID = who[1], who[0]
	return a, nil
}
