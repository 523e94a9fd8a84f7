package mock

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wecomkit/wecom/catalog"
)

// App group chats (群聊会话, appchat/*) as WeCom keeps them: chats an app
// creates among members of the corp's directory (Server.AddUsers), which
// only that app changes, reads and posts to. A message to a chat reaches
// each of its members, except those over their 200 a minute in groups, for
// whom WeCom answers success and drops it (the route's silent limits). The
// Server counts, per member, what was delivered and dropped
// (AppChatTally), so that a test can prove none was.

// appChat is one app group chat.
type appChat struct {
	name, owner string
	members     []string // in the order they joined
	app         string   // the app that created it
}

// appChatBook is a corp's app group chats.
type appChatBook struct {
	chats map[string]*appChat
	seq   int
	tally map[string]*MessageTally // by userid
}

func (c *corp) appChatsOf() *appChatBook {
	if c.appChats == nil {
		c.appChats = &appChatBook{chats: make(map[string]*appChat), tally: make(map[string]*MessageTally)}
	}
	return c.appChats
}

// The message types appchat/send takes.
var appChatTypes = []string{"text", "image", "voice", "video", "file", "textcard", "news", "mpnews", "markdown"}

// AppChatTally returns what a member of a corp was sent in app group
// chats. Deduplicated stays zero: appchat/send has no duplicate check.
func (s *Server) AppChatTally(corpID, userID string) MessageTally {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil || c.appChats == nil || c.appChats.tally[userID] == nil {
		return MessageTally{}
	}
	return *c.appChats.tally[userID]
}

// AppChatMembers returns the members of an app group chat of a corp, and
// whether it exists.
func (s *Server) AppChatMembers(corpID, chatID string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil {
		return nil, false
	}
	ms := c.appChatMembers(chatID)
	return ms, ms != nil
}

// appChatMembers returns the members of chat id, nil when there is no such
// chat. s.mu must be held.
func (c *corp) appChatMembers(id string) []string {
	if c.appChats == nil || c.appChats.chats[id] == nil {
		return nil
	}
	return slices.Clone(c.appChats.chats[id].members)
}

// ownChat returns chat id of the calling app: 86003 when there is none,
// 86008 when another app created it.
func (c *corp) ownChat(in *input, id string) (*appChat, *apiError) {
	ch := c.appChatsOf().chats[id]
	switch {
	case ch == nil:
		return nil, errf(catalog.CodeChatNotFound, "chatid not found")
	case ch.app != in.app:
		return nil, errf(catalog.CodeChatNotOwned, "no permission to a chat another app created")
	}
	return ch, nil
}

type appChatCreateRequest struct {
	Name   string   `json:"name"`
	Owner  string   `json:"owner"`
	Users  []string `json:"userlist"`
	ChatID string   `json:"chatid"`
}

type appChatCreateAnswer struct {
	status
	ChatID string `json:"chatid"`
}

// AppChats registers the app group chat (群聊会话) APIs.
func (handlerSets) AppChats() handlers {
	return handlers{
		catalog.AppChatCreate: (*corp).appChatCreate,
		catalog.AppChatUpdate: (*corp).appChatUpdate,
		catalog.AppChatGet:    (*corp).appChatGet,
		catalog.AppChatSend:   (*corp).appChatSend,
	}
}

// appChatCreate creates a chat (document/path/90245).
func (c *corp) appChatCreate(in *input) (any, *apiError) {
	var req appChatCreateRequest
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	book := c.appChatsOf()
	id := req.ChatID
	switch {
	case len(id) > catalog.AppChatIDLen || strings.IndexFunc(id, notAlnum) >= 0:
		return nil, errf(catalog.CodeInvalidChatID, "invalid chatid")
	case id != "" && book.chats[id] != nil:
		return nil, errf(catalog.CodeChatIDExists, "chatid already exists")
	}
	members := distinct(c.userIDs(req.Users))
	owner := c.userIDs([]string{req.Owner})[0]
	if err := c.checkChatMembers(members, owner); err != nil {
		return nil, err
	}
	for id == "" || book.chats[id] != nil {
		book.seq++
		id = "wrappchat" + strconv.Itoa(book.seq)
	}
	if owner == "" {
		owner = members[0]
	}
	book.chats[id] = &appChat{name: cut(req.Name, catalog.AppChatNameLen), owner: owner, members: members, app: in.app}
	return appChatCreateAnswer{status: okStatus("ok"), ChatID: id}, nil
}

// checkChatMembers checks the members a chat would have, and its owner
// when one is named.
func (c *corp) checkChatMembers(members []string, owner string) *apiError {
	switch {
	case len(members) < catalog.AppChatMinMembers || len(members) > catalog.AppChatMaxMembers:
		return errf(catalog.CodeChatMemberCount, "too many or too few members: %d", len(members))
	case slices.ContainsFunc(members, func(u string) bool { return !c.users[u] }):
		return errf(catalog.CodeInvalidChatMember, "invalid chat member userid")
	case owner != "" && !slices.Contains(members, owner):
		return errf(catalog.CodeChatOwnerNotMember, "owner not in the member list")
	}
	return nil
}

type appChatUpdateRequest struct {
	ChatID string   `json:"chatid"`
	Name   string   `json:"name"`
	Owner  string   `json:"owner"`
	Add    []string `json:"add_user_list"`
	Del    []string `json:"del_user_list"`
}

// appChatUpdate changes a chat (document/path/90246): every change is
// checked before any is made.
func (c *corp) appChatUpdate(in *input) (any, *apiError) {
	var req appChatUpdateRequest
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	ch, err := c.ownChat(in, req.ChatID)
	if err != nil {
		return nil, err
	}
	req.Add, req.Del = c.userIDs(req.Add), c.userIDs(req.Del)
	if slices.ContainsFunc(req.Add, func(u string) bool { return !c.users[u] || slices.Contains(ch.members, u) }) ||
		slices.ContainsFunc(req.Del, func(u string) bool { return !slices.Contains(ch.members, u) }) {
		return nil, errf(catalog.CodeInvalidChatMember, "invalid chat member userid")
	}
	members := slices.DeleteFunc(slices.Clone(ch.members), func(u string) bool { return slices.Contains(req.Del, u) })
	members = distinct(append(members, req.Add...))
	owner := c.userIDs([]string{req.Owner})[0]
	if owner == "" && slices.Contains(members, ch.owner) {
		owner = ch.owner
	}
	if err := c.checkChatMembers(members, owner); err != nil {
		return nil, err
	}
	if owner == "" { // the owner left: WeCom hands the chat to a member
		owner = members[0]
	}
	ch.members, ch.owner = members, owner
	if req.Name != "" {
		ch.name = cut(req.Name, catalog.AppChatNameLen)
	}
	return okStatus("ok"), nil
}

type appChatInfo struct {
	ChatID   string   `json:"chatid"`
	Name     string   `json:"name"`
	Owner    string   `json:"owner"`
	UserList []string `json:"userlist"`
	ChatType int      `json:"chat_type"`
}

type appChatGetAnswer struct {
	status
	ChatInfo appChatInfo `json:"chat_info"`
}

// appChatGet reads a chat (document/path/90247).
func (c *corp) appChatGet(in *input) (any, *apiError) {
	id := in.query.Get("chatid")
	ch, err := c.ownChat(in, id)
	if err != nil {
		return nil, err
	}
	return appChatGetAnswer{status: okStatus("ok"),
		ChatInfo: appChatInfo{ChatID: id, Name: ch.name, Owner: ch.owner, UserList: slices.Clone(ch.members)}}, nil
}

// appChatSend posts a message to a chat (document/path/90248): delivered to
// each member but those its silent limits drop it for.
func (c *corp) appChatSend(in *input) (any, *apiError) {
	var req struct {
		ChatID  string `json:"chatid"`
		MsgType string `json:"msgtype"`
	}
	var raw map[string]json.RawMessage
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := in.decode(&raw); err != nil {
		return nil, err
	}
	ch, err := c.ownChat(in, req.ChatID)
	if err != nil {
		return nil, err
	}
	switch content := raw[req.MsgType]; {
	case !slices.Contains(appChatTypes, req.MsgType):
		return nil, errf(catalog.CodeInvalidMsgType, "invalid message type")
	case len(content) == 0 || string(content) == "null":
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter: no %s", req.MsgType)
	case req.MsgType == "text" && !hasField(content, "content"):
		return nil, errf(catalog.CodeEmptyContent, "empty content")
	}
	book := c.appChatsOf()
	for _, u := range ch.members {
		deliver(book.tally, u, in)
	}
	return okStatus("ok"), nil
}

// distinct returns ids without repeats, in their order.
func distinct(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// cut returns s cut to n characters.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

func notAlnum(r rune) bool {
	return (r < '0' || r > '9') && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z')
}
