package wecom

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// MessageService calls the app message (应用消息) APIs.
//
// WeCom drops, without an error, every message beyond 30 a minute and
// 1,000 an hour from one app to one member. Send counts each message on
// every member it names and waits, within its context, until all of them
// have room: nothing is sent that WeCom would drop. SendReady sends at
// once to the members with room and hands back the others.
//
// An app's daily quota (the corp's account limit times 200
// recipient-messages) depends on the corp: declare it with
// WithRule(catalog.MessageSend.Path(), catalog.MessageQuota(n)).
type MessageService service

// Message is one app message (message/send, document/path/90236).
type Message struct {
	// ToUser are the members it goes to, by userid: at most
	// MaxMessageUsers. A userid named twice (in any case) gets it once.
	ToUser []string
	// ToParty and ToTag are departments and tags whose members it goes
	// to (at most 100 each), and ToAll every member the app can reach.
	// These members are NOT counted by the per-member windows: the SDK
	// cannot tell them from the request, and WeCom drops silently what
	// goes over a member's 30 a minute or 1,000 an hour. Such a send is
	// marked in Attempt.Uncounted for the observer. Name the users in
	// ToUser when every message must arrive.
	ToParty []int
	ToTag   []int
	ToAll   bool
	// AgentID is the app's id; zero means the client's (WithAgentID).
	AgentID int
	// Content is what the message says: a *TextMessage, *ImageMessage,
	// *VoiceMessage, *VideoMessage, *FileMessage, *TextCardMessage,
	// *NewsMessage, *MPNewsMessage, *MarkdownMessage, *MiniProgramNotice
	// or *TemplateCardMessage.
	Content MessageContent
	// Safe marks a confidential message (保密消息): it cannot be
	// forwarded, and shows the reader's watermark.
	Safe bool
	// EnableIDTrans turns userids and party ids in the text into names
	// (id转译).
	EnableIDTrans bool
	// DuplicateCheck makes WeCom deliver no copy of the same message within
	// DuplicateInterval (default 30 minutes, at most 4 hours). With it, a
	// send whose answer was lost (a timeout, -1) is retried: a copy that
	// got through is not delivered twice. Without it, such a send is not
	// retried, and its error says the message may have been delivered
	// (it matches ErrMaybeDone). A send that never left is retried either
	// way.
	// It also drops a message you meant to send twice within the interval.
	DuplicateCheck    bool
	DuplicateInterval time.Duration
}

// MaxMessageUsers is the most members one message names (touser).
const MaxMessageUsers = 1000

// maxMessageGroups is the most parties, and the most tags, one message
// names.
const maxMessageGroups = 100

// MaxDuplicateInterval is the longest duplicate check WeCom takes.
const MaxDuplicateInterval = 4 * time.Hour

// defaultDuplicateInterval is WeCom's duplicate check when none is given.
const defaultDuplicateInterval = 30 * time.Minute

// MessageContent is the content of a Message: one of the message types in
// this package (TextMessage and the others), each of which says its
// msgtype and checks itself.
type MessageContent interface {
	// MsgType is the message's msgtype on the wire ("text", ...).
	MsgType() string
	// Validate reports what WeCom would refuse in the content.
	Validate() error
}

// SendResult is WeCom's answer to a message.
type SendResult struct {
	// MsgID identifies the message, to recall it.
	MsgID string
	// ResponseCode is the code that updates an interactive template card
	// (once, within 72 hours); empty for other messages.
	ResponseCode string
	// InvalidUsers, InvalidParties and InvalidTags are recipients WeCom did
	// not find (the message went to the others); UnlicensedUsers are
	// members without the license the app needs.
	InvalidUsers    []string
	InvalidParties  []string
	InvalidTags     []string
	UnlicensedUsers []string
}

// Send sends an app message to the members m names. It waits until every
// one of them has room in the per-member windows, however long the
// context allows; when the context cannot wait that long, it fails at
// once with a *RateLimitError whose Members are those without room, and
// nothing is sent to anyone.
func (s *MessageService) Send(ctx context.Context, m Message) (SendResult, error) {
	return s.send(ctx, m, false)
}

// Deferred are the members SendReady did not send to: their windows had
// no room.
type Deferred struct {
	// Members are their userids, as the Message named them.
	Members []string
	// RetryAfter is when every one of them has room again, from the
	// refusal that named the last of them.
	RetryAfter time.Duration
}

// SendReady sends m at once to the members of m.ToUser who have room in
// their per-member windows now, and hands back the others in Deferred,
// without waiting for them; send them later (or with Send, which waits).
// When none has room, nothing is sent and the SendResult is empty. It
// counts members, so m names its recipients in ToUser only.
func (s *MessageService) SendReady(ctx context.Context, m Message) (SendResult, Deferred, error) {
	if m.ToAll || len(m.ToParty)+len(m.ToTag) > 0 {
		return SendResult{}, Deferred{}, invalid("message recipients", "SendReady counts each member: name them in ToUser only")
	}
	var d Deferred
	ready := distinctUserIDs(m.ToUser)
	for len(ready) > 0 {
		m.ToUser = ready
		res, err := s.send(ctx, m, true)
		var rl *RateLimitError
		if !errors.As(err, &rl) || len(rl.Members) == 0 || errors.Is(err, ErrMaybeDone) {
			return res, d, err
		}
		full := make(map[string]bool, len(rl.Members))
		for _, u := range rl.Members {
			full[strings.ToLower(u)] = true
		}
		kept := slices.DeleteFunc(slices.Clone(ready), func(u string) bool { return full[strings.ToLower(u)] })
		if len(kept) == len(ready) {
			return res, d, err // the refusal named none of them
		}
		for _, u := range ready {
			if full[strings.ToLower(u)] {
				d.Members = append(d.Members, u)
			}
		}
		d.RetryAfter = max(d.RetryAfter, rl.RetryAfter)
		ready = kept
	}
	return SendResult{}, d, nil
}

// send sends m; with tryMembers, it takes the members' windows only if
// they have room now.
func (s *MessageService) send(ctx context.Context, m Message, tryMembers bool) (SendResult, error) {
	body, err := messageBody(m, s.p.cfg.agentID)
	if err != nil {
		return SendResult{}, err
	}
	cl := &call{id: catalog.MessageSend, body: body, tryMembers: tryMembers}
	if m.DuplicateCheck {
		cl.dedupe = cmp.Or(m.DuplicateInterval, defaultDuplicateInterval)
	}
	var out sendAnswer
	cl.out = &out
	err = s.p.perform(ctx, cl)
	return SendResult{MsgID: out.MsgID, ResponseCode: out.ResponseCode, InvalidUsers: out.InvalidUser,
		InvalidParties: out.InvalidParty, InvalidTags: out.InvalidTag, UnlicensedUsers: out.UnlicensedUser}, err
}

// messageBody checks m and returns its JSON body.
func messageBody(m Message, agentID int) (json.RawMessage, error) {
	agent := cmp.Or(m.AgentID, agentID)
	users := distinctUserIDs(m.ToUser)
	var errs []error
	switch {
	case m.ToAll && len(m.ToUser)+len(m.ToParty)+len(m.ToTag) > 0:
		errs = append(errs, invalid("message recipients", "ToAll with users, parties or tags"))
	case !m.ToAll && len(m.ToUser)+len(m.ToParty)+len(m.ToTag) == 0:
		errs = append(errs, invalid("message recipients", "none: set ToUser, ToParty, ToTag or ToAll"))
	case len(m.ToParty) > maxMessageGroups || len(m.ToTag) > maxMessageGroups:
		errs = append(errs, invalid("message recipients", "%d parties and %d tags, at most %d each", len(m.ToParty), len(m.ToTag), maxMessageGroups))
	case slices.ContainsFunc(m.ToParty, func(id int) bool { return id <= 0 }) || slices.ContainsFunc(m.ToTag, func(id int) bool { return id <= 0 }):
		errs = append(errs, invalid("message recipients", "a party or tag id not positive"))
	case len(users) > MaxMessageUsers:
		errs = append(errs, invalid("message touser", "%d distinct members, at most %d", len(users), MaxMessageUsers))
	case slices.ContainsFunc(m.ToUser, func(u string) bool { return u == "" || u == "@all" || strings.ContainsAny(u, "|") }):
		errs = append(errs, invalid("message touser", "an empty userid, @all or a userid holding '|'"))
	}
	if agent <= 0 {
		errs = append(errs, invalid("message agentid", "none: set Message.AgentID or WithAgentID"))
	}
	if m.DuplicateInterval < 0 || m.DuplicateInterval > MaxDuplicateInterval || m.DuplicateInterval%time.Second != 0 {
		errs = append(errs, invalid("message duplicate_check_interval", "%s: whole seconds, at most %s", m.DuplicateInterval, MaxDuplicateInterval))
	}
	if m.Content == nil {
		errs = append(errs, invalid("message content", "none"))
	} else if err := m.Content.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	w := map[string]any{
		"msgtype":           m.Content.MsgType(),
		"agentid":           agent,
		m.Content.MsgType(): m.Content,
	}
	switch {
	case m.ToAll:
		w["touser"] = "@all"
	case len(m.ToUser) > 0:
		w["touser"] = strings.Join(users, "|")
	}
	if len(m.ToParty) > 0 {
		w["toparty"] = joinIDs(m.ToParty)
	}
	if len(m.ToTag) > 0 {
		w["totag"] = joinIDs(m.ToTag)
	}
	if m.Safe {
		w["safe"] = 1
	}
	if m.EnableIDTrans {
		w["enable_id_trans"] = 1
	}
	if m.DuplicateCheck {
		w["enable_duplicate_check"] = 1
		if m.DuplicateInterval > 0 {
			w["duplicate_check_interval"] = int(m.DuplicateInterval / time.Second)
		}
	}
	return json.Marshal(w)
}

// joinIDs writes ids as WeCom's "1|2|3".
func joinIDs(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, "|")
}

// sendAnswer is message/send's answer. The invalid lists come as "a|b"
// strings; a linked corp's send has answered arrays.
type sendAnswer struct {
	MsgID          string  `json:"msgid"`
	ResponseCode   string  `json:"response_code"`
	InvalidUser    barList `json:"invaliduser"`
	InvalidParty   barList `json:"invalidparty"`
	InvalidTag     barList `json:"invalidtag"`
	UnlicensedUser barList `json:"unlicenseduser"`
}

// barList is a list WeCom sends as "a|b|c", or as an array of strings or
// numbers.
type barList []string

// UnmarshalJSON reads either form; null and "" are empty.
func (l *barList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*l = slices.DeleteFunc(strings.Split(s, "|"), func(v string) bool { return v == "" })
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return errors.New("neither a string nor an array")
	}
	out := make([]string, 0, len(raw))
	for _, r := range raw {
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			return err
		}
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case float64:
			out = append(out, string(r))
		default:
			return errors.New("an element is neither a string nor a number")
		}
	}
	*l = out
	return nil
}
