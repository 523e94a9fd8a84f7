package wecom

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"

	"github.com/wecomkit/wecom/catalog"
)

// Managing sent app messages: recalling one, updating a template card, and
// the apps' counts of messages sent.

// Recall recalls a message the app sent within the last 24 hours, by the
// MsgID Send answered (message/recall, document/path/94867). It recalls it
// from the WeCom apps only: a copy shown in WeChat (微信插件) stays. A
// recall is not repeated after an error of unknown outcome: see
// ErrMaybeDone.
func (s *MessageService) Recall(ctx context.Context, msgID string) error {
	if msgID == "" {
		return invalid("recall msgid", "empty")
	}
	return s.p.perform(ctx, &call{id: catalog.MessageRecall, body: map[string]string{"msgid": msgID}})
}

// UpdateTemplateCardRequest updates a template card the app sent
// (message/update_template_card, document/path/94888): for the members it
// names, its clicked button or the whole card.
type UpdateTemplateCardRequest struct {
	// ResponseCode is the code Send answered for the card, or the one a
	// callback of a member's click carried. Each code updates once, within
	// 72 hours.
	ResponseCode string
	// AgentID is the app's id; zero means the client's (WithAgentID).
	AgentID int
	// Users (at most MaxMessageUsers), Parties and Tags (at most 100 each)
	// are the members whose card changes; All changes it for everyone it
	// was sent to. One of them is required.
	Users   []string
	Parties []int
	Tags    []int
	All     bool
	// ReplaceButton turns the card's buttons into one that cannot be
	// clicked, showing this text (button.replace_name): for button, vote
	// and multiple-choice cards. Card replaces the whole card instead, with
	// a card of any type. Exactly one of them is set.
	ReplaceButton string
	Card          *TemplateCardMessage
}

// MaxCardUpdateGroups is the most parties, and the most tags, an update
// of a template card names.
const MaxCardUpdateGroups = 100

// UpdateTemplateCardResult is WeCom's answer to a card update.
type UpdateTemplateCardResult struct {
	// InvalidUsers are the members WeCom did not find (the others' cards
	// changed).
	InvalidUsers []string
}

// UpdateTemplateCard updates a template card. Its response code serves
// once: the call is never repeated, and an error of unknown outcome
// (ErrMaybeDone) leaves the caller to look at the card.
func (s *MessageService) UpdateTemplateCard(ctx context.Context, req UpdateTemplateCardRequest) (UpdateTemplateCardResult, error) {
	body, err := cardUpdateBody(req, s.p.cfg.agentID)
	if err != nil {
		return UpdateTemplateCardResult{}, err
	}
	var out struct {
		InvalidUser barList `json:"invaliduser"`
	}
	err = s.p.perform(ctx, &call{id: catalog.MessageUpdateCard, body: body, out: &out})
	return UpdateTemplateCardResult{InvalidUsers: out.InvalidUser}, err
}

// cardUpdateBody checks req and returns its JSON body.
func cardUpdateBody(req UpdateTemplateCardRequest, agentID int) (json.RawMessage, error) {
	agent := cmp.Or(req.AgentID, agentID)
	var errs []error
	if req.ResponseCode == "" {
		errs = append(errs, invalid("update_template_card response_code", "empty"))
	}
	if agent <= 0 {
		errs = append(errs, invalid("update_template_card agentid", "none: set AgentID or WithAgentID"))
	}
	if !req.All && len(req.Users)+len(req.Parties)+len(req.Tags) == 0 {
		errs = append(errs, invalid("update_template_card recipients", "no users, parties or tags, and not all"))
	}
	if len(req.Users) > MaxMessageUsers || len(req.Parties) > MaxCardUpdateGroups || len(req.Tags) > MaxCardUpdateGroups {
		errs = append(errs, invalid("update_template_card recipients", "%d users, %d parties, %d tags: at most %d, %d and %d",
			len(req.Users), len(req.Parties), len(req.Tags), MaxMessageUsers, MaxCardUpdateGroups, MaxCardUpdateGroups))
	}
	switch {
	case (req.ReplaceButton == "") == (req.Card == nil):
		errs = append(errs, invalid("update_template_card button", "set either the button's replace_name or a new card"))
	case req.Card != nil:
		errs = append(errs, req.Card.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	w := map[string]any{"agentid": agent, "response_code": req.ResponseCode}
	if req.All {
		w["atall"] = 1
	}
	if len(req.Users) > 0 {
		w["userids"] = req.Users
	}
	if len(req.Parties) > 0 {
		w["partyids"] = req.Parties
	}
	if len(req.Tags) > 0 {
		w["tagids"] = req.Tags
	}
	if req.Card != nil {
		w["template_card"] = req.Card
	} else {
		w["button"] = map[string]string{"replace_name": req.ReplaceButton}
	}
	return json.Marshal(w)
}

// StatisticsDay is the day of message/get_statistics: today or yesterday
// (China Standard Time).
type StatisticsDay int

// The days WeCom counts.
const (
	StatisticsToday     StatisticsDay = 0
	StatisticsYesterday StatisticsDay = 1
)

// AppStatistic is what one app sent on a day.
type AppStatistic struct {
	AgentID int    `json:"agentid"`
	AppName string `json:"app_name"`
	// Count is the messages delivered, counted once per recipient.
	Count int `json:"count"`
}

// Statistics returns how many messages each of the corp's apps delivered
// today or yesterday (message/get_statistics, document/path/92369).
func (s *MessageService) Statistics(ctx context.Context, day StatisticsDay) ([]AppStatistic, error) {
	if day != StatisticsToday && day != StatisticsYesterday {
		return nil, invalid("get_statistics time_type", "%d: StatisticsToday or StatisticsYesterday", day)
	}
	var out struct {
		Statistics []AppStatistic `json:"statistics"`
	}
	err := s.p.perform(ctx, &call{id: catalog.MessageStatistics, body: map[string]int{"time_type": int(day)}, out: &out})
	return out.Statistics, err
}
