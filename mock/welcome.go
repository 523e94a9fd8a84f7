package mock

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// Welcome messages (externalcontact/send_welcome_msg, document/path/92137):
// a member's new customer is sent one message with the welcome_code of the
// add_external_contact event, once, within 20 seconds of it.

// WelcomeCodeTTL is how long a welcome_code serves.
const WelcomeCodeTTL = 20 * time.Second

// Welcome is a welcome message the Server delivered.
type Welcome struct {
	UserID, ExternalUserID string
	// Text is the message's text; Attachments the msgtype of each of its
	// attachments, in order.
	Text        string
	Attachments []string
}

// welcomeBook is a corp's welcome codes and the messages sent with them.
type welcomeBook struct {
	codes map[string]*welcomeCode
	sent  []Welcome
	seq   int
}

type welcomeCode struct {
	userID, externalUserID string
	expires                time.Time
	used                   bool
}

func (c *corp) welcomesOf() *welcomeBook {
	if c.welcomes == nil {
		c.welcomes = &welcomeBook{codes: make(map[string]*welcomeCode)}
	}
	return c.welcomes
}

// WelcomeCode issues the welcome_code of member userID's new customer
// externalUserID, as WeCom does in the add_external_contact event: it
// serves once, for WelcomeCodeTTL from the Server's clock.
func (s *Server) WelcomeCode(corpID, userID, externalUserID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.corpLocked(corpID).newWelcomeCode(userID, externalUserID, s.now())
}

// newWelcomeCode issues a welcome code at now.
func (c *corp) newWelcomeCode(userID, externalUserID string, now time.Time) string {
	wb := c.welcomesOf()
	wb.seq++
	code := "welcome" + strconv.Itoa(wb.seq)
	wb.codes[code] = &welcomeCode{userID: userID, externalUserID: externalUserID, expires: now.Add(WelcomeCodeTTL)}
	return code
}

// Welcomes returns the welcome messages delivered to a customer, oldest
// first.
func (s *Server) Welcomes(corpID, externalUserID string) []Welcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil || c.welcomes == nil {
		return nil
	}
	var out []Welcome
	for _, w := range c.welcomes.sent {
		if w.ExternalUserID == externalUserID {
			out = append(out, w)
		}
	}
	return out
}

type welcomeRequest struct {
	WelcomeCode string `json:"welcome_code"`
	Text        *struct {
		Content string `json:"content"`
	} `json:"text"`
	Attachments []map[string]json.RawMessage `json:"attachments"`
}

// The msgtypes of a welcome message's attachments.
var attachmentTypes = map[string]bool{"image": true, "link": true, "miniprogram": true, "video": true, "file": true}

// Welcome registers the welcome message.
func (handlerSets) Welcome() handlers {
	return handlers{
		catalog.SendWelcomeMsg: (*corp).sendWelcome,
	}
}

// sendWelcome delivers a welcome message. A code that is unknown, used or
// past its 20 seconds gets 41051, as WeCom answers a code another app used
// first (its page gives no code for the other cases).
func (c *corp) sendWelcome(in *input) (any, *apiError) {
	var req welcomeRequest
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if req.WelcomeCode == "" {
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter: welcome_code")
	}
	w := Welcome{}
	if req.Text != nil {
		w.Text = req.Text.Content
	}
	if len(req.Attachments) > 9 {
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter: more than 9 attachments")
	}
	for _, a := range req.Attachments {
		var t string
		if json.Unmarshal(a["msgtype"], &t) != nil || !attachmentTypes[t] || len(a[t]) == 0 {
			return nil, errf(catalog.CodeInvalidParam, "invalid parameter: attachment msgtype")
		}
		w.Attachments = append(w.Attachments, t)
	}
	if w.Text == "" && len(w.Attachments) == 0 {
		return nil, errf(catalog.CodeEmptyContent, "empty content")
	}
	wc := c.welcomesOf().codes[req.WelcomeCode]
	if wc == nil || wc.used || !in.now.Before(wc.expires) {
		return nil, errf(catalog.CodeInvalidWelcomeCode, "welcome code is invalid, expired or used")
	}
	wc.used = true
	w.UserID, w.ExternalUserID = wc.userID, wc.externalUserID
	c.welcomes.sent = append(c.welcomes.sent, w)
	return okStatus("ok"), nil
}
