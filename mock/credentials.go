package mock

import (
	"encoding/json"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// The credentials other than the access token: the JS-SDK tickets of a corp
// and of its apps, third-party suites and service providers with their
// tokens, and a provider's web logins.

// issuer is a suite or a provider: its secret, the suite_tickets a suite's
// token accepts (suites.go), and its current token (nil before one).
type issuer struct {
	id, secret string
	token      *token
	tickets
}

// tokenBook is the tokens of one kind of issuer (suites, providers). Each
// issuer's calls act on a state of their own, the corp named kind:id.
type tokenBook struct {
	kind             string
	issuers          map[string]*issuer
	tokens           map[string]*token
	invalid, expired int // the errcodes of a token it did not issue, of one expired
}

func newTokenBook(kind string, invalid, expired int) *tokenBook {
	return &tokenBook{kind: kind, issuers: make(map[string]*issuer), tokens: make(map[string]*token), invalid: invalid, expired: expired}
}

// issue answers iss's current token, made if none is valid at now, under
// field, without errcode on success as WeCom does. s.mu is held.
func (b *tokenBook) issue(s *Server, iss *issuer, field string, now time.Time) []byte {
	if iss.token == nil || !now.Before(iss.token.expires) {
		iss.token = &token{value: newTokenValue(), corp: b.kind + ":" + iss.id, app: iss.id, expires: now.Add(s.tokenTTL)}
		b.tokens[iss.token.value] = iss.token
		s.corpLocked(iss.token.corp)
	}
	return mustMarshal(map[string]any{field: iss.token.value, "expires_in": int(iss.token.expires.Sub(now) / time.Second)})
}

// check is checkToken of the book's tokens. s.mu is held.
func (b *tokenBook) check(s *Server, value string, now time.Time) (*corp, *token, *apiError) {
	tok := b.tokens[value]
	switch {
	case tok == nil:
		return nil, nil, errf(b.invalid, "invalid %s_access_token", b.kind)
	case !now.Before(tok.expires):
		return nil, nil, errf(b.expired, "%s_access_token expired", b.kind)
	}
	return s.corpLocked(tok.corp), tok, nil
}

// invalidate makes every token issued so far invalid.
func (b *tokenBook) invalidate() {
	b.tokens = make(map[string]*token)
	for _, iss := range b.issuers {
		iss.token = nil
	}
}

// AddSuite registers a third-party suite with its secret and the
// suite_ticket get_suite_token accepts (SetSuiteTicket changes it).
func (s *Server) AddSuite(suiteID, secret, ticket string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &issuer{id: suiteID, secret: secret}
	st.tickets.set(ticket)
	s.suites.issuers[suiteID] = st
}

// SetSuiteTicket makes ticket the one suite_ticket get_suite_token accepts
// for suiteID, for as long as the Server runs, and every other one
// invalid (PushSuiteTicket adds one, valid SuiteTicketLifetime, as WeCom's
// pushes do).
func (s *Server) SetSuiteTicket(suiteID, ticket string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.suites.issuers[suiteID]; st != nil {
		st.tickets.set(ticket)
	}
}

// getSuiteToken answers get_suite_token.
func (s *Server) getSuiteToken(body []byte, ip string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var req struct {
		SuiteID     string `json:"suite_id"`
		SuiteSecret string `json:"suite_secret"`
		SuiteTicket string `json:"suite_ticket"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return s.errorAnswer(errf(catalog.CodeDataFormat, "data format error"), ip, now, true)
	}
	st := s.suites.issuers[req.SuiteID]
	switch {
	case st == nil || req.SuiteSecret != st.secret:
		return s.errorAnswer(errf(catalog.CodeInvalidSuiteID, "invalid suite id or secret"), ip, now, true)
	case !st.tickets.accepts(req.SuiteTicket, now):
		return s.errorAnswer(errf(catalog.CodeInvalidSuiteTicket, "invalid suite ticket"), ip, now, true)
	}
	return s.suites.issue(s, st, "suite_access_token", now)
}

// InvalidateSuiteTokens makes every suite token issued so far invalid.
func (s *Server) InvalidateSuiteTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.suites.invalidate()
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

// Credentials registers the tickets, the pre-auth code and the web login;
// the suite's and the provider's tokens are nil: serve answers them itself.
func (handlerSets) Credentials() handlers {
	return handlers{
		catalog.JSAPITicket:      (*corp).jsapiTicket,
		catalog.AgentTicket:      (*corp).jsapiTicket,
		catalog.GetSuiteToken:    nil,
		catalog.GetPreAuthCode:   (*corp).preAuthCode,
		catalog.GetProviderToken: nil,
		catalog.GetLoginInfo:     (*corp).loginInfo,
	}
}

// jsapiTicket answers get_jsapi_ticket and ticket/get: a ticket valid two
// hours, the same until then.
func (c *corp) jsapiTicket(in *input) (any, *apiError) {
	kind := "jsapi"
	if in.query.Has("type") {
		if in.query.Get("type") != "agent_config" {
			return nil, errf(catalog.CodeInvalidParam, "invalid type")
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

// AddProvider registers a service provider: its corp id and provider
// secret.
func (s *Server) AddProvider(corpID, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.providers.issuers[corpID] = &issuer{id: corpID, secret: secret}
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
	s.providers.invalidate()
}

// getProviderToken answers get_provider_token.
func (s *Server) getProviderToken(body []byte, ip string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var req struct {
		CorpID string `json:"corpid"`
		Secret string `json:"provider_secret"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return s.errorAnswer(errf(catalog.CodeDataFormat, "data format error"), ip, now, true)
	}
	p := s.providers.issuers[req.CorpID]
	if p == nil || req.Secret != p.secret {
		return s.errorAnswer(errf(catalog.CodeInvalidSecret, "invalid provider secret"), ip, now, true)
	}
	return s.providers.issue(s, p, "provider_access_token", now)
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
	Agent    []loginAgent `json:"agent"`
	AuthInfo struct {
		Department []loginDepartment `json:"department"`
	} `json:"auth_info"`
}

type loginAgent struct {
	AgentID  int `json:"agentid"`
	AuthType int `json:"auth_type"`
}

type loginDepartment struct {
	ID       int  `json:"id"`
	Writable bool `json:"writable"`
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
		return nil, errf(catalog.CodeInvalidParam, "invalid auth_code")
	}
	delete(c.logins, req.AuthCode)
	// An internal admin of the corp's app, managing its department 1, as
	// WeCom's documented answer shows.
	a := loginInfoAnswer{status: okStatus("ok"), UserType: 2}
	a.UserInfo.UserID, a.CorpInfo.CorpID = who[1], who[0]
	a.Agent = []loginAgent{{AgentID: installedAgentID, AuthType: 1}}
	a.AuthInfo.Department = []loginDepartment{{ID: 1, Writable: true}}
	return a, nil
}
