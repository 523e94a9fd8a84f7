package mock

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/wecomkit/wecom/catalog"
)

// Linked-corp messages (linkedcorp/message/send) as WeCom delivers them: to
// the members a message names that the corp's directory holds, a linked
// corp's member as "corpid/userid" (add them with Server.AddUsers in that
// form), except those over their minute or hour from the app, for whom
// WeCom answers success and drops the message. They are tallied with the
// app messages (MessageTally, by the id the message names). The invalid
// recipients come back as arrays.

type linkedSendRequest struct {
	ToUser  []string `json:"touser"`
	ToParty []string `json:"toparty"`
	ToTag   []string `json:"totag"`
	ToAll   int      `json:"toall"`
	MsgType string   `json:"msgtype"`
	AgentID int      `json:"agentid"`
}

type linkedSendAnswer struct {
	status
	InvalidUser  []string `json:"invaliduser,omitempty"`
	InvalidParty []string `json:"invalidparty,omitempty"`
	InvalidTag   []string `json:"invalidtag,omitempty"`
}

// Linked registers the linked-corp message.
func (handlerSets) Linked() handlers {
	return handlers{
		catalog.LinkedMessageSend: (*corp).linkedMessageSend,
	}
}

// linkedMessageSend delivers a message to members of linked corps
// (document/path/90250).
func (c *corp) linkedMessageSend(in *input) (any, *apiError) {
	var req linkedSendRequest
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := in.decode(&raw); err != nil {
		return nil, err
	}
	switch content := raw[req.MsgType]; {
	case req.AgentID <= 0:
		return nil, errf(catalog.CodeInvalidAgentID, "invalid agentid")
	case !msgTypes[req.MsgType] || req.MsgType == "template_card":
		return nil, errf(catalog.CodeInvalidMsgType, "invalid message type")
	case len(content) == 0 || string(content) == "null":
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter: no %s", req.MsgType)
	case req.MsgType == "text" && !hasField(content, "content"):
		return nil, errf(catalog.CodeEmptyContent, "empty content")
	}
	out := linkedSendAnswer{status: okStatus("ok")}
	var users []string
	for _, u := range req.ToUser {
		if id, ok := c.user(u); ok {
			users = append(users, id)
		} else {
			out.InvalidUser = append(out.InvalidUser, u)
		}
	}
	known := func(list []string, holds func(int) bool) (bad []string, n int) {
		for _, p := range list {
			// A linked corp's party ("linkedid/partyid") is unknown to the
			// mock, which holds one corp's directory.
			if id, err := strconv.Atoi(p); err == nil && !strings.Contains(p, "/") && holds(id) {
				n++
			} else {
				bad = append(bad, p)
			}
		}
		return bad, n
	}
	var parties, tags int
	out.InvalidParty, parties = known(req.ToParty, func(id int) bool { return c.parties[id] })
	out.InvalidTag, tags = known(req.ToTag, func(id int) bool { return c.tags[id] != nil })
	if len(users) == 0 && parties == 0 && tags == 0 && req.ToAll != 1 {
		return nil, errf(catalog.CodeAllRecipientsInvalid, "user & party & tag all invalid")
	}
	mb := c.messagesOf()
	for _, u := range users {
		deliver(mb.tally, u, in)
	}
	return out, nil
}
