package mock

import (
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// App messages (message/send) as WeCom delivers them: to the members of
// the corp's directory a message names (the others come back as invalid),
// except those over their minute or hour from the app, for whom WeCom
// answers success and drops the message (the route's silent limits), and
// copies within a duplicate check. The Server counts, per member, what was
// delivered and what was dropped, so that a test can prove none was.

// MessageTally counts the app messages one member was sent.
type MessageTally struct {
	// Delivered reached the member.
	Delivered int
	// Dropped were answered with success and not delivered: over the
	// member's 30 a minute or 1,000 an hour from one app.
	Dropped int
	// Deduplicated were copies of a message the member got within its
	// duplicate check (enable_duplicate_check): not delivered again.
	Deduplicated int
}

// messageBook is a corp's app messages.
type messageBook struct {
	tally map[string]*MessageTally // by userid
	// sent: the end of each message's duplicate check, by app and the
	// digest of its body.
	sent map[string]time.Time
	seq  int
	// issued: the messages sent, by msgid, and the response codes of the
	// template cards, by code; delivered: the recipient-messages each app
	// delivered, by China Standard Time day (messages_manage.go).
	issued    map[string]*issuedMessage
	codes     map[string]*issuedCode
	delivered map[appDay]int
}

func (c *corp) messagesOf() *messageBook {
	if c.messages == nil {
		c.messages = &messageBook{tally: make(map[string]*MessageTally), sent: make(map[string]time.Time),
			issued: make(map[string]*issuedMessage), codes: make(map[string]*issuedCode), delivered: make(map[appDay]int)}
	}
	return c.messages
}

// MessageTally returns what a member of a corp was sent.
func (s *Server) MessageTally(corpID, userID string) MessageTally {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil || c.messages == nil || c.messages.tally[userID] == nil {
		return MessageTally{}
	}
	return *c.messages.tally[userID]
}

// The msgtypes of message/send.
var msgTypes = map[string]bool{"text": true, "image": true, "voice": true, "video": true, "file": true, "textcard": true,
	"news": true, "mpnews": true, "markdown": true, "miniprogram_notice": true, "template_card": true}

type sendRequest struct {
	ToUser         string `json:"touser"`
	ToParty        string `json:"toparty"`
	ToTag          string `json:"totag"`
	MsgType        string `json:"msgtype"`
	AgentID        int    `json:"agentid"`
	DuplicateCheck int    `json:"enable_duplicate_check"`
	Interval       int    `json:"duplicate_check_interval"`
}

type sendAnswer struct {
	status
	InvalidUser  string `json:"invaliduser,omitempty"`
	InvalidParty string `json:"invalidparty,omitempty"`
	InvalidTag   string `json:"invalidtag,omitempty"`
	MsgID        string `json:"msgid"`
	ResponseCode string `json:"response_code,omitempty"`
}

// Messages registers message/send.
func (handlerSets) Messages() handlers {
	return handlers{
		catalog.MessageSend: (*corp).messageSend,
	}
}

// messageSend delivers an app message (document/path/90236).
func (c *corp) messageSend(in *input) (any, *apiError) {
	var req sendRequest
	var raw map[string]json.RawMessage
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := in.decode(&raw); err != nil {
		return nil, err
	}
	switch content := raw[req.MsgType]; {
	case req.AgentID <= 0:
		return nil, errf(catalog.CodeInvalidAgentID, "invalid agentid")
	case !msgTypes[req.MsgType]:
		return nil, errf(catalog.CodeInvalidMsgType, "invalid message type")
	case len(content) == 0 || string(content) == "null":
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter: no %s", req.MsgType)
	case req.MsgType == "text" && !hasField(content, "content"):
		return nil, errf(catalog.CodeEmptyContent, "empty content")
	}
	var users, bad []string
	switch req.ToUser {
	case "":
	case "@all": // every member the app reaches: the mock's whole directory
		for u := range c.users {
			users = append(users, u)
		}
	default:
		for _, u := range strings.Split(req.ToUser, "|") {
			if id, ok := c.user(u); ok {
				users = append(users, id)
			} else {
				bad = append(bad, u)
			}
		}
	}
	badParties, parties := unknownIDs(req.ToParty, func(id int) bool { return c.parties[id] })
	badTags, tags := unknownIDs(req.ToTag, func(id int) bool { return c.tags[id] != nil })
	if len(users) == 0 && parties == 0 && tags == 0 {
		return nil, errf(catalog.CodeAllRecipientsInvalid, "user & party & tag all invalid")
	}
	mb := c.messagesOf()
	mb.seq++
	out := sendAnswer{status: okStatus("ok"), InvalidUser: strings.Join(bad, "|"), InvalidParty: badParties,
		InvalidTag: badTags, MsgID: "msg" + strconv.Itoa(mb.seq)}
	if req.MsgType == "template_card" {
		out.ResponseCode = "rc" + strconv.Itoa(mb.seq)
	}
	mb.issue(in, req.AgentID, out.MsgID, out.ResponseCode)
	dup := mb.duplicate(in, req)
	day := appDay{agentID: req.AgentID, day: catalog.DayOf(in.now)}
	for _, u := range users {
		if dup {
			tallyOf(mb.tally, u).Deduplicated++
		} else if deliver(mb.tally, u, in) {
			mb.delivered[day]++
		}
	}
	return out, nil
}

// tallyOf returns member u's tally in tallies, made on first use.
func tallyOf(tallies map[string]*MessageTally, u string) *MessageTally {
	t := tallies[u]
	if t == nil {
		t = &MessageTally{}
		tallies[u] = t
	}
	return t
}

// deliver tallies a message to member u as delivered, or as dropped when
// the call's silent limits drop it for u; it reports a delivery.
func deliver(tallies map[string]*MessageTally, u string, in *input) bool {
	t := tallyOf(tallies, u)
	if in.dropped[strings.ToLower(u)] {
		t.Dropped++
		return false
	}
	t.Delivered++
	return true
}

// userIDs returns ids as the directory holds them, where it holds them
// (user); the others as they are.
func (c *corp) userIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, u := range ids {
		out[i] = u
		if id, ok := c.user(u); ok {
			out[i] = id
		}
	}
	return out
}

// user returns the userid of the directory that u names: WeCom compares
// userids without case.
func (c *corp) user(u string) (string, bool) {
	if c.users[u] {
		return u, true
	}
	for id := range c.users {
		if strings.EqualFold(id, u) {
			return id, true
		}
	}
	return "", false
}

// duplicate reports whether the message is a copy, within its duplicate
// check, of one the app sent, and records it.
func (mb *messageBook) duplicate(in *input, req sendRequest) bool {
	if req.DuplicateCheck != 1 {
		return false
	}
	sum := sha256.Sum256(in.body)
	key := in.app + "|" + string(sum[:])
	if until, ok := mb.sent[key]; ok && in.now.Before(until) {
		return true
	}
	interval := time.Duration(req.Interval) * time.Second
	if interval <= 0 {
		interval = 30 * time.Minute
	}
	if len(mb.sent) >= 1024 {
		for k, until := range mb.sent {
			if !in.now.Before(until) {
				delete(mb.sent, k)
			}
		}
	}
	mb.sent[key] = in.now.Add(interval)
	return false
}

// unknownIDs returns the ids of list ("1|2", parties or tags) that holds
// does not hold, joined as WeCom answers them, and how many it holds.
func unknownIDs(list string, holds func(int) bool) (unknown string, known int) {
	if list == "" {
		return "", 0
	}
	var bad []string
	for _, p := range strings.Split(list, "|") {
		if id, err := strconv.Atoi(p); err == nil && holds(id) {
			known++
		} else {
			bad = append(bad, p)
		}
	}
	return strings.Join(bad, "|"), known
}

// hasField reports whether the JSON object obj has a non-empty string
// field name.
func hasField(obj json.RawMessage, name string) bool {
	var m map[string]any
	if json.Unmarshal(obj, &m) != nil {
		return false
	}
	s, ok := m[name].(string)
	return ok && s != ""
}
