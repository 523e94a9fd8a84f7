package mock

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// Sent app messages as WeCom manages them: a message recalled once within
// 24 hours by the app that sent it (message/recall); a template card
// updated once per response code, within 72 hours (update_template_card);
// and the recipient-messages each app delivered today and yesterday
// (get_statistics).

// How long a sent message can be recalled, and a card's response code used
// (document/path/94867 and 94888).
const (
	recallWindow       = 24 * time.Hour
	responseCodeWindow = 72 * time.Hour
)

// issuedMessage is a message the Server sent.
type issuedMessage struct {
	app      string
	at       time.Time
	recalled bool
}

// issuedCode is a template card's response code.
type issuedCode struct {
	app  string
	at   time.Time
	used bool
}

// appDay keys the deliveries of an app (by agentid) on a China Standard
// Time day (catalog.DayOf).
type appDay struct {
	agentID int
	day     string
}

// issue records a message sent, and its response code if it has one,
// forgetting what can no longer be recalled or used when the book grows.
func (mb *messageBook) issue(in *input, agentID int, msgID, code string) {
	if len(mb.issued) >= 4096 {
		for id, m := range mb.issued {
			if in.now.Sub(m.at) >= recallWindow {
				delete(mb.issued, id)
			}
		}
		for c, rc := range mb.codes {
			if in.now.Sub(rc.at) >= responseCodeWindow {
				delete(mb.codes, c)
			}
		}
		yesterday := catalog.DayOf(in.now.Add(-24 * time.Hour))
		for k := range mb.delivered {
			if k.day < yesterday {
				delete(mb.delivered, k)
			}
		}
	}
	mb.issued[msgID] = &issuedMessage{app: in.app, at: in.now}
	if code != "" {
		mb.codes[code] = &issuedCode{app: in.app, at: in.now}
	}
}

// MessagesManage registers the recall, the card update and the statistics
// of app messages.
func (handlerSets) MessagesManage() handlers {
	return handlers{
		catalog.MessageRecall:     (*corp).messageRecall,
		catalog.MessageUpdateCard: (*corp).messageUpdateCard,
		catalog.MessageStatistics: (*corp).messageStatistics,
	}
}

// messageRecall recalls a message the app sent within 24 hours
// (document/path/94867).
func (c *corp) messageRecall(in *input) (any, *apiError) {
	var req struct {
		MsgID string `json:"msgid"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	var m *issuedMessage
	if c.messages != nil {
		m = c.messages.issued[req.MsgID]
	}
	switch {
	case req.MsgID == "":
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter: no msgid")
	case m == nil || m.app != in.app:
		return nil, errf(catalog.CodeInvalidParam, "invalid msgid: no message of the app")
	case m.recalled:
		return nil, errf(catalog.CodeInvalidParam, "invalid msgid: the message was recalled")
	case in.now.Sub(m.at) >= recallWindow:
		return nil, errf(catalog.CodeInvalidParam, "invalid msgid: sent over 24 hours ago")
	}
	m.recalled = true
	return okStatus("ok"), nil
}

type cardUpdateRequest struct {
	UserIDs      []string `json:"userids"`
	PartyIDs     []int    `json:"partyids"`
	TagIDs       []int    `json:"tagids"`
	AtAll        int      `json:"atall"`
	AgentID      int      `json:"agentid"`
	ResponseCode string   `json:"response_code"`
	Button       *struct {
		ReplaceName string `json:"replace_name"`
	} `json:"button"`
	TemplateCard map[string]any `json:"template_card"`
}

type cardUpdateAnswer struct {
	status
	InvalidUser []string `json:"invaliduser,omitempty"`
}

// messageUpdateCard updates a template card by its response code, once
// (document/path/94888): the recipients it names that the corp does not
// know come back in invaliduser.
func (c *corp) messageUpdateCard(in *input) (any, *apiError) {
	var req cardUpdateRequest
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	switch {
	case req.AgentID <= 0:
		return nil, errf(catalog.CodeInvalidAgentID, "invalid agentid")
	case (req.Button == nil || req.Button.ReplaceName == "") == (req.TemplateCard == nil):
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter: neither button.replace_name nor template_card")
	case req.TemplateCard != nil && !isCardType(req.TemplateCard["card_type"]):
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter: template_card card_type")
	}
	var bad []string
	users := 0
	for _, u := range req.UserIDs {
		if _, ok := c.user(u); ok {
			users++
		} else {
			bad = append(bad, u)
		}
	}
	parties := len(slices.DeleteFunc(slices.Clone(req.PartyIDs), func(id int) bool { return !c.parties[id] }))
	tags := len(slices.DeleteFunc(slices.Clone(req.TagIDs), func(id int) bool { return c.tags[id] == nil }))
	if req.AtAll != 1 && users+parties+tags == 0 {
		return nil, errf(catalog.CodeAllRecipientsInvalid, "user & party & tag all invalid")
	}
	var rc *issuedCode
	if c.messages != nil {
		rc = c.messages.codes[req.ResponseCode]
	}
	if rc == nil || rc.app != in.app || rc.used || in.now.Sub(rc.at) >= responseCodeWindow {
		return nil, errf(catalog.CodeInvalidResponseCode, "invalid response_code: unknown, used or expired")
	}
	rc.used = true
	return cardUpdateAnswer{status: okStatus("ok"), InvalidUser: bad}, nil
}

// isCardType reports whether v is one of the card types of a template
// card.
func isCardType(v any) bool {
	switch v {
	case "text_notice", "news_notice", "button_interaction", "vote_interaction", "multiple_interaction":
		return true
	}
	return false
}

type appStatistic struct {
	AgentID int    `json:"agentid"`
	AppName string `json:"app_name"`
	Count   int    `json:"count"`
}

type statisticsAnswer struct {
	status
	Statistics []appStatistic `json:"statistics"`
}

// messageStatistics answers the recipient-messages each app delivered today
// (time_type 0) or yesterday (1), China Standard Time
// (document/path/92369). The Server knows an app by the agentid of its
// sends, and names it "app <agentid>"; an app that sent nothing that day is
// not listed.
func (c *corp) messageStatistics(in *input) (any, *apiError) {
	var req struct {
		TimeType int `json:"time_type"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if req.TimeType != 0 && req.TimeType != 1 {
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter: time_type %d", req.TimeType)
	}
	day := catalog.DayOf(in.now.Add(-time.Duration(req.TimeType) * 24 * time.Hour))
	out := statisticsAnswer{status: okStatus("ok"), Statistics: []appStatistic{}}
	if c.messages != nil {
		for k, n := range c.messages.delivered {
			if k.day == day {
				out.Statistics = append(out.Statistics, appStatistic{AgentID: k.agentID, AppName: "app " + strconv.Itoa(k.agentID), Count: n})
			}
		}
	}
	slices.SortFunc(out.Statistics, func(a, b appStatistic) int { return cmp.Compare(a.AgentID, b.AgentID) })
	return out, nil
}
