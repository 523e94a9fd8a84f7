package wecom

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// The JS-SDK tickets: the corp's jsapi_ticket (wx.config) and the app's
// agent_config ticket (wx.agentConfig), each valid two hours and capped at
// 100 fetches an hour per app. They are credentials as the access token is:
// cached and shared through the token store, fetched once at a time by
// the whole fleet, refreshed ahead of expiry, and redacted.

// initTickets makes the ticket credentials.
func (c *Client) initTickets() {
	c.jsapi = c.ticket("jsapi ticket", catalog.JSAPITicket, nil, "jsapi")
	c.agentTkt = c.ticket("agent ticket", catalog.AgentTicket, url.Values{"type": {"agent_config"}}, "agent")
}

// ticket returns the credential of the ticket id answers.
func (c *Client) ticket(name string, id catalog.ID, q url.Values, kind string) *credential {
	app := c.tokens.app
	m := &credential{c: c, name: name, store: c.tokens.store, refreshAhead: c.tokens.refreshAhead, badFor: c.tokens.badFor,
		key: "wecom:ticket:{" + c.corpID + "}:" + app + ":" + kind, app: app, refused: func(int) bool { return false }}
	m.lock = func(ctx context.Context) (func(), error) {
		return c.lockKey(ctx, id.Path(), throttle.Request{Key: c.corpTag() + "#fetch:" + kind + ":" + app, Concurrency: 1, TTL: c.leaseTTL()})
	}
	m.ask = func(ctx context.Context) (Token, error) {
		var out ticketAnswer
		start := time.Now()
		if err := c.do(ctx, &call{id: id, query: q, out: &out}); err != nil {
			return Token{}, err
		}
		return Token{Value: out.Ticket, ExpiresAt: start.Add(time.Duration(out.ExpiresIn) * time.Second)}, nil
	}
	return m
}

// ticketAnswer is a ticket API's answer.
type ticketAnswer struct {
	Ticket    string `json:"ticket"`
	ExpiresIn int64  `json:"expires_in"`
}

func (a *ticketAnswer) validate() error {
	if a.Ticket == "" || a.ExpiresIn <= 0 {
		return errors.New("no ticket or no positive expires_in")
	}
	return nil
}

// JSAPITicket returns the corp's jsapi_ticket, to sign wx.config
// (get_jsapi_ticket, document/path/90506).
func (c *Client) JSAPITicket(ctx context.Context) (string, error) { return c.jsapi.token(ctx) }

// AgentTicket returns the app's ticket, to sign wx.agentConfig
// (ticket/get?type=agent_config, document/path/90506).
func (c *Client) AgentTicket(ctx context.Context) (string, error) { return c.agentTkt.token(ctx) }

// InvalidateTicket drops ticket, a JS-SDK ticket this client handed out
// that a page found refused, from this process and the token store, unless
// a newer one already replaced it: the next JSAPITicket or AgentTicket
// fetches one.
func (c *Client) InvalidateTicket(ctx context.Context, ticket string) {
	for _, m := range []*credential{c.jsapi, c.agentTkt} {
		m.invalidate(ctx, ticket)
	}
}
