package wecom

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"net/url"
	"strconv"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// The JS-SDK tickets: the corp's jsapi_ticket (wx.config) and the app's
// agent_config ticket (wx.agentConfig), each valid two hours and capped at
// 100 fetches an hour per app. They are credentials as the access token is:
// cached and shared through the token store, fetched once at a time by
// the whole fleet, refreshed ahead of expiry, and redacted.

// ticket returns the credential of the ticket id answers.
func (p *pipeline) ticket(name string, id catalog.ID, q url.Values, kind string) *credential {
	app := p.corp().app
	m := p.kept(name, "wecom:ticket:{"+p.cfg.corpID+"}:"+app+":"+kind, app, p.corpTag()+"#fetch:"+kind+":"+app, id)
	m.ask = func(ctx context.Context) (Token, error) {
		var out ticketAnswer
		return p.askToken(ctx, &call{id: id, query: q, out: &out}, func() (string, int64) { return out.Ticket, out.ExpiresIn })
	}
	return m
}

// ticketAnswer is a ticket API's answer.
type ticketAnswer struct {
	Ticket    string `json:"ticket"`
	ExpiresIn int64  `json:"expires_in"`
}

func (a *ticketAnswer) validate() error { return validExpiring("ticket", a.Ticket, a.ExpiresIn) }

// JSAPITicket returns the corp's jsapi_ticket, to sign wx.config
// (get_jsapi_ticket, document/path/90506).
func (c *Client) JSAPITicket(ctx context.Context) (string, error) {
	return c.p.tickets.jsapi.token(ctx)
}

// AgentTicket returns the app's ticket, to sign wx.agentConfig
// (ticket/get?type=agent_config, document/path/90506).
func (c *Client) AgentTicket(ctx context.Context) (string, error) {
	return c.p.tickets.agent.token(ctx)
}

// InvalidateTicket drops ticket, a JS-SDK ticket this client handed out
// that a page found refused, from this process and the token store, unless
// a newer one already replaced it: the next JSAPITicket or AgentTicket
// fetches one.
func (c *Client) InvalidateTicket(ctx context.Context, ticket string) {
	for _, m := range []*credential{c.p.tickets.jsapi, c.p.tickets.agent} {
		m.invalidate(ctx, ticket)
	}
}

// JSSDKSignature is what a page passes to wx.config or wx.agentConfig.
type JSSDKSignature struct {
	// CorpID is the corp's id (wx.config's appId, wx.agentConfig's corpid).
	CorpID string
	// AgentID is the app's id (wx.agentConfig only).
	AgentID   int
	Timestamp int64
	NonceStr  string
	Signature string
}

// JSSDKConfig signs pageURL (the page's full URL, without its #fragment)
// for wx.config with the corp's jsapi_ticket (document/path/90506).
func (c *Client) JSSDKConfig(ctx context.Context, pageURL string) (JSSDKSignature, error) {
	return jssdkSign(ctx, c.p.tickets.jsapi, c.p.cfg.corpID, 0, pageURL)
}

// JSSDKAgentConfig signs pageURL for wx.agentConfig with the app's
// ticket; it needs WithAgentID.
func (c *Client) JSSDKAgentConfig(ctx context.Context, pageURL string) (JSSDKSignature, error) {
	if c.p.cfg.agentID == 0 {
		return JSSDKSignature{}, invalid("agent id", "wx.agentConfig needs the app's id: WithAgentID")
	}
	return jssdkSign(ctx, c.p.tickets.agent, c.p.cfg.corpID, c.p.cfg.agentID, pageURL)
}

// jssdkSign signs pageURL with the ticket m keeps, for agentID (0: the
// corp's wx.config).
func jssdkSign(ctx context.Context, m *credential, corpID string, agentID int, pageURL string) (JSSDKSignature, error) {
	u, err := url.Parse(pageURL)
	if err != nil || !u.IsAbs() {
		return JSSDKSignature{}, invalid("page url", "%q is not an absolute URL", pageURL)
	}
	u.Fragment, u.RawFragment = "", "" // signed without it, as the page's location.href.split('#')[0]
	ticket, err := m.token(ctx)
	if err != nil {
		return JSSDKSignature{}, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	s := JSSDKSignature{CorpID: corpID, AgentID: agentID, Timestamp: time.Now().Unix(), NonceStr: hex.EncodeToString(b[:])}
	s.Signature = jssdkSignature(ticket, s.NonceStr, s.Timestamp, u.String())
	return s, nil
}

// jssdkSignature is the JS-SDK's signature: the SHA-1, in hex, of its four
// fields in this order.
func jssdkSignature(ticket, nonce string, timestamp int64, pageURL string) string {
	sum := sha1.Sum([]byte("jsapi_ticket=" + ticket + "&noncestr=" + nonce + "&timestamp=" + strconv.FormatInt(timestamp, 10) + "&url=" + pageURL))
	return hex.EncodeToString(sum[:])
}
