package wecom

import (
	"context"
	"errors"
	"time"

	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/catalog"
)

// SuiteTicketLifetime is how long a suite_ticket is valid from the moment
// WeCom sent it (its callback's TimeStamp). WeCom pushes a new one every 10
// minutes, so a ticket outlives two missed pushes (document/path/97162).
const SuiteTicketLifetime = 30 * time.Minute

// Suite calls the APIs of a third-party suite (第三方应用): those carrying
// its suite_access_token, which only a Suite holds, so that no other token
// can be sent to them (nor its token to another API: a call of another
// kind fails with a *TokenKindError before anything is sent).
//
// Its token is fetched with the suite's id, secret and the newest
// suite_ticket the token store holds: feed it the tickets WeCom pushes to
// the suite's command URL (ReceiveTicket, SetTicket), from any process of
// the fleet; every process sharing the store uses them. The token is kept
// as a Client's access token is: in the token store, fetched once at a
// time by the fleet (through the limiter), refreshed ahead of expiry,
// dropped when WeCom refuses it (40082, 42009) and fetched again; its
// secret, tickets and token are redacted from every error and log.
//
// A Suite's calls count in the limits under its suite id, as a Client's
// count under its corp id. A Suite is safe for concurrent use and starts
// no goroutine until it calls.
type Suite struct {
	p  *pipeline
	id string
}

// NewSuite returns the Suite of suiteID (ww… or wx…) and its secret. The
// options are the Client's: WithTokenStore (share it with the fleet, and
// with whatever feeds the tickets), WithLimiter, WithBaseURL, WithTransport,
// WithLogger and the like; those about a corp's app (WithAgentID,
// WithTokenSource) do nothing here.
func NewSuite(suiteID, secret string, opts ...Option) (*Suite, error) {
	if err := validID("suite id", suiteID); err != nil {
		return nil, err
	}
	if secret == "" {
		return nil, invalid("suite secret", "empty")
	}
	cfg, err := newConfig(suiteID, "", opts)
	if err != nil {
		return nil, err
	}
	cfg.suite = &suiteConfig{id: suiteID, secret: secret}
	p, err := newPipeline(cfg)
	if err != nil {
		return nil, err
	}
	return &Suite{p: p, id: suiteID}, nil
}

// ID returns the suite's id.
func (s *Suite) ID() string { return s.id }

// Drain waits until every attempt of the suite that may outlive its caller
// has ended, or until ctx ends, as Client.Drain.
func (s *Suite) Drain(ctx context.Context) error { return s.p.background.wait(ctx) }

// suiteTicketKey is the token store's key of a suite's newest ticket.
func suiteTicketKey(suiteID string) string { return "wecom:suite_ticket:{" + suiteID + "}" }

// SetTicket keeps ticket, which WeCom sent at sentAt (the TimeStamp of its
// suite_ticket callback), in the token store for SuiteTicketLifetime from
// then, unless the store holds a newer one: a ticket arriving late, after
// a newer one, is dropped, in this process and across the fleet. A ticket
// already expired is a *ValidationError.
func (s *Suite) SetTicket(ctx context.Context, ticket string, sentAt time.Time) error {
	expires := sentAt.Add(SuiteTicketLifetime)
	switch {
	case ticket == "":
		return invalid("suite ticket", "empty")
	case !time.Now().Before(expires):
		return invalid("suite ticket", "sent at %s, expired at %s", sentAt.Format(time.RFC3339), expires.Format(time.RFC3339))
	}
	_, err := setNewer(ctx, s.p.cfg.tokenStore, suiteTicketKey(s.id), Token{Value: ticket, ExpiresAt: expires})
	return s.p.redactErr(err)
}

// ReceiveTicket keeps the ticket of a suite_ticket callback, as SetTicket:
// the one line a callback.Handler's suite_ticket case needs. A ticket of
// another suite is a *ValidationError.
func (s *Suite) ReceiveTicket(ctx context.Context, ev *callback.SuiteTicketEvent) error {
	switch {
	case ev == nil:
		return invalid("suite ticket event", "nil")
	case ev.SuiteID != s.id:
		return invalid("suite ticket event", "for suite %q, not %q", ev.SuiteID, s.id)
	}
	return s.SetTicket(ctx, ev.SuiteTicket, time.Unix(ev.TimeStamp, 0))
}

// suiteCredential makes the suite's token: fetched with the newest ticket
// of the store, never again with one WeCom refused (40085).
func (p *pipeline) suiteCredential() *credential {
	cfg := p.cfg.suite
	m := p.kept("suite access token", "wecom:suite:{"+cfg.id+"}", cfg.id, "{"+cfg.id+"}#fetch:suite", catalog.GetSuiteToken, cfg.secret)
	m.param = catalog.SuiteToken.String()
	m.refused = func(code int) bool {
		// WeCom answers a token of the wrong kind with 40014 too
		return isSuiteTokenCode(code) || code == CodeInvalidAccessToken
	}
	var refusedTicket string // the last ticket WeCom refused; m.mu
	m.ask = func(ctx context.Context) (Token, error) {
		t, err := p.cfg.tokenStore.Get(ctx, suiteTicketKey(cfg.id))
		m.mu.Lock()
		m.remember(t.Value) // a ticket is a secret too
		refused := t.Value != "" && t.Value == refusedTicket
		m.mu.Unlock()
		switch {
		case errors.Is(err, ErrNoToken):
			return Token{}, &SuiteTicketError{SuiteID: cfg.id, Reason: "none received in the last 30 minutes"}
		case err != nil:
			return Token{}, &SuiteTicketError{SuiteID: cfg.id, Reason: "the token store failed", Err: p.redactErr(err)}
		case refused:
			return Token{}, &SuiteTicketError{SuiteID: cfg.id, Reason: "WeCom refused the newest (40085); waiting for the next push"}
		}
		var out suiteTokenAnswer
		body := map[string]string{"suite_id": cfg.id, "suite_secret": cfg.secret, "suite_ticket": t.Value}
		tok, err := p.askToken(ctx, &call{id: catalog.GetSuiteToken, body: body, out: &out}, func() (string, int64) { return out.SuiteAccessToken, out.ExpiresIn })
		var ae *APIError
		if errors.As(err, &ae) && ae.Code == CodeInvalidSuiteTicket {
			m.mu.Lock()
			refusedTicket = t.Value
			m.mu.Unlock()
			return Token{}, &SuiteTicketError{SuiteID: cfg.id, Reason: "WeCom refused the newest", Err: err}
		}
		return tok, err
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
