package wecom

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/wecomkit/wecom/catalog"
)

// LinkedMessage is an app message to members of linked corps (互联企业) and
// of the corp itself (linkedcorp/message/send, document/path/90250).
type LinkedMessage struct {
	// ToUser are the members it goes to: userids of the corp, and
	// "corpid/userid" for a linked corp's members; at most
	// LinkedMessageUsers. They are counted per app and member with
	// Messages.Send's messages (30 a minute, 1,000 an hour).
	ToUser []string
	// ToParty ("linkedid/partyid", or the corp's party ids), ToTag (the
	// corp's tag ids) and ToAll (everyone the app can reach, linked corps'
	// members included) reach members the SDK cannot count from the
	// request: they are not counted (Attempt.Uncounted says so to the
	// observer), and WeCom drops silently what goes over a member's
	// windows. Name the users in ToUser when every message must arrive.
	ToParty []string
	ToTag   []string
	ToAll   bool
	// AgentID is the app's id; zero means the client's (WithAgentID).
	AgentID int
	// Content is what the message says: one of the message types of
	// Message.Content.
	Content MessageContent
	// Safe marks a confidential message (保密消息).
	Safe bool
}

// The most recipients of each kind one linked-corp message names.
const (
	LinkedMessageUsers   = catalog.LinkedMessageUsers
	LinkedMessageParties = catalog.LinkedMessageParties
	LinkedMessageTags    = catalog.LinkedMessageTags
)

// SendLinked sends an app message to members of linked corps. Like Send,
// it waits until every member it names has room in the per-member windows,
// or fails at once, nothing sent, with a *RateLimitError naming those
// without room. The result's invalid lists are WeCom's arrays; MsgID is
// empty, as WeCom's page shows none.
func (s *MessageService) SendLinked(ctx context.Context, m LinkedMessage) (SendResult, error) {
	body, err := linkedBody(m, s.p.cfg.agentID)
	if err != nil {
		return SendResult{}, err
	}
	var out sendAnswer
	err = s.p.perform(ctx, &call{id: catalog.LinkedMessageSend, body: body, out: &out})
	return SendResult{MsgID: out.MsgID, InvalidUsers: out.InvalidUser, InvalidParties: out.InvalidParty,
		InvalidTags: out.InvalidTag, UnlicensedUsers: out.UnlicensedUser}, err
}

// linkedBody checks m and returns its JSON body.
func linkedBody(m LinkedMessage, agentID int) (json.RawMessage, error) {
	agent := cmp.Or(m.AgentID, agentID)
	empty := func(s string) bool { return s == "" }
	var errs []error
	switch {
	case len(m.ToUser) == 0 && len(m.ToParty) == 0 && len(m.ToTag) == 0 && !m.ToAll:
		errs = append(errs, invalid("message touser", "no recipient"))
	case len(m.ToUser) > LinkedMessageUsers || len(m.ToParty) > LinkedMessageParties || len(m.ToTag) > LinkedMessageTags:
		errs = append(errs, invalid("message recipients", "%d users, %d parties, %d tags: at most %d, %d, %d",
			len(m.ToUser), len(m.ToParty), len(m.ToTag), LinkedMessageUsers, LinkedMessageParties, LinkedMessageTags))
	case slices.ContainsFunc(m.ToUser, empty) || slices.ContainsFunc(m.ToParty, empty) || slices.ContainsFunc(m.ToTag, empty):
		errs = append(errs, invalid("message recipients", "an empty id"))
	}
	if agent <= 0 {
		errs = append(errs, invalid("message agentid", "none: set LinkedMessage.AgentID or WithAgentID"))
	}
	if m.Content == nil {
		errs = append(errs, invalid("message content", "none"))
	} else if err := m.Content.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	w := map[string]any{"msgtype": m.Content.MsgType(), "agentid": agent, m.Content.MsgType(): m.Content}
	if len(m.ToUser) > 0 {
		w["touser"] = distinctUserIDs(m.ToUser)
	}
	if len(m.ToParty) > 0 {
		w["toparty"] = distinctIDs(m.ToParty)
	}
	if len(m.ToTag) > 0 {
		w["totag"] = distinctIDs(m.ToTag)
	}
	if m.ToAll {
		w["toall"] = 1
	}
	if m.Safe {
		w["safe"] = 1
	}
	return json.Marshal(w)
}
