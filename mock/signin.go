package mock

import (
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// Sign-in (身份验证, document/path/91023 and 95833): the code WeCom sends an
// app's redirect URI after an OAuth sign-in or a web login names who signed
// in, once and for five minutes (auth/getuserinfo); a member who consented
// to snsapi_privateinfo comes with a user_ticket, which reads the member's
// sensitive fields for 1,800 seconds (auth/getuserdetail). Both expire on
// the Server's clock (Config.Now).

// How long the sign-in credentials serve.
const (
	SignInCodeTTL = 5 * time.Minute
	UserTicketTTL = 1800 * time.Second
)

// SignIn is who a sign-in code the Server issues signs in: a member of the
// corp (UserID set) or a visitor who is not one (UserID empty).
type SignIn struct {
	// UserID is the member's userid; empty for a visitor.
	UserID string
	// Private, for a member, makes the sign-in one of scope
	// snsapi_privateinfo that the member consented to: getuserinfo answers
	// a user_ticket, and getuserdetail answers these fields with it (its
	// UserID is the member's, whatever it says). Nil: no user_ticket, as
	// for snsapi_base.
	Private *PrivateInfo
	// OpenID names a visitor; empty, the Server makes one up.
	OpenID string
	// ExternalUserID is set for a visitor who is a customer of the corp.
	ExternalUserID string
}

// PrivateInfo is what getuserdetail answers of a member: the sensitive
// fields WeCom returns with the member's consent. Gender is a string, as
// WeCom sends it ("0" unknown, "1" male, "2" female); empty, the Server
// answers "0".
type PrivateInfo struct {
	UserID, Gender, Avatar, QRCode, Mobile, Email, BizMail, Address string
}

// signInBook is a corp's sign-in codes and user tickets.
type signInBook struct {
	codes   map[string]*signInCode
	tickets map[string]*userTicket
}

type signInCode struct {
	who     SignIn
	expires time.Time
	used    bool
}

type userTicket struct {
	info    PrivateInfo
	expires time.Time
}

func (c *corp) signInsOf() *signInBook {
	if c.signIns == nil {
		c.signIns = &signInBook{codes: make(map[string]*signInCode), tickets: make(map[string]*userTicket)}
	}
	return c.signIns
}

// SignInCode issues a sign-in code for who in corpID, as WeCom hands one to
// the redirect URI: auth/getuserinfo answers it once, within SignInCodeTTL
// of the Server's clock; later, or a second time, it gets 40029.
func (s *Server) SignInCode(corpID string, who SignIn) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.corpLocked(corpID).signInsOf()
	if who.UserID == "" && who.OpenID == "" {
		who.OpenID = "oVisitor" + newTokenValue()[:16]
	}
	if who.Private != nil {
		p := *who.Private
		p.UserID = who.UserID
		who.Private = &p
	}
	code := "code" + newTokenValue()[:40]
	b.codes[code] = &signInCode{who: who, expires: s.now().Add(SignInCodeTTL)}
	return code
}

// signInAnswer is auth/getuserinfo's answer: a member's fields or a
// visitor's, the others left out.
type signInAnswer struct {
	status
	UserID         string `json:"userid,omitempty"`
	UserTicket     string `json:"user_ticket,omitempty"`
	OpenID         string `json:"openid,omitempty"`
	ExternalUserID string `json:"external_userid,omitempty"`
}

type privateInfoAnswer struct {
	status
	UserID  string `json:"userid"`
	Gender  string `json:"gender"`
	Avatar  string `json:"avatar"`
	QRCode  string `json:"qr_code"`
	Mobile  string `json:"mobile"`
	Email   string `json:"email"`
	BizMail string `json:"biz_mail"`
	Address string `json:"address"`
}

// SignIns registers the sign-in APIs.
func (handlerSets) SignIns() handlers {
	return handlers{
		catalog.AuthGetUserInfo:   (*corp).getUserInfo,
		catalog.AuthGetUserDetail: (*corp).getUserDetail,
	}
}

// getUserInfo answers who a code signed in, once. An empty, unknown, used
// or expired code gets 40029 (document/path/91023), whose errmsg does not
// echo it.
func (c *corp) getUserInfo(in *input) (any, *apiError) {
	code := in.query.Get("code")
	sc := c.signInsOf().codes[code]
	if sc == nil || sc.used || !in.now.Before(sc.expires) {
		return nil, errf(catalog.CodeInvalidOAuthCode, "invalid code")
	}
	sc.used = true
	who := sc.who
	if who.UserID == "" {
		return signInAnswer{status: okStatus("ok"), OpenID: who.OpenID, ExternalUserID: who.ExternalUserID}, nil
	}
	a := signInAnswer{status: okStatus("ok"), UserID: who.UserID}
	if who.Private != nil {
		a.UserTicket = "ticket" + newTokenValue()[:40]
		c.signIns.tickets[a.UserTicket] = &userTicket{info: *who.Private, expires: in.now.Add(UserTicketTTL)}
	}
	return a, nil
}

// getUserDetail answers a member's sensitive fields for a user_ticket
// within its 1,800 seconds; a ticket may be used again until then. WeCom's
// pages name no errcode for an unknown or expired ticket: the Server
// answers 40029, the code of the sign-in code the ticket came with.
func (c *corp) getUserDetail(in *input) (any, *apiError) {
	var req struct {
		UserTicket string `json:"user_ticket"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	t := c.signInsOf().tickets[req.UserTicket]
	if t == nil || !in.now.Before(t.expires) {
		return nil, errf(catalog.CodeInvalidOAuthCode, "invalid user_ticket")
	}
	p := t.info
	if p.Gender == "" {
		p.Gender = "0" // what WeCom answers without consent to it
	}
	return privateInfoAnswer{status: okStatus("ok"), UserID: p.UserID, Gender: p.Gender, Avatar: p.Avatar, QRCode: p.QRCode,
		Mobile: p.Mobile, Email: p.Email, BizMail: p.BizMail, Address: p.Address}, nil
}
