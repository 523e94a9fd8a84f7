package mock

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/wecomkit/wecom/catalog"
)

// GroupChat is a customer group chat (客户群) as held by a Server.
type GroupChat struct {
	// ChatID is the group's id ("wr…"); groupchat/list answers groups in
	// the order of their ids.
	ChatID string
	Name   string
	// Owner is the userid of the member who owns the group.
	Owner string
	// Status is where the group stands in the handover of a departed
	// owner's groups (离职继承): 0 the owner is a member, 1 the owner left
	// and the group waits for a new one, 2 being handed over, 3 handed
	// over. groupchat/transfer takes only groups in state 1 or 2, and
	// leaves them in state 3.
	Status int
	// CreateTime is when the group was created, in Unix seconds.
	CreateTime int64
	Notice     string
	Members    []GroupChatMember
	// Admins are the userids of the group's administrators.
	Admins []string
	// MemberVersion changes when the members change.
	MemberVersion string
}

// GroupChatMember is one member of a GroupChat.
type GroupChatMember struct {
	// UserID is a member's userid (Type 1) or a customer's
	// external_userid (Type 2).
	UserID string
	// Type is 1 for a member of the corp, 2 for an external contact. The
	// members of Type 1 count among the corp's members for the owner-filter
	// rule of groupchat/list.
	Type int
	// UnionID is an external contact's WeChat unionid; empty for others.
	UnionID string
	// JoinTime is when they joined, in Unix seconds.
	JoinTime int64
	// JoinScene is how they joined: 1 invited, 2 by link, 3 by QR code.
	JoinScene int
	// Invitor is the userid of the member who invited them; empty when
	// none did.
	Invitor string
	// GroupNickname is their nickname in the group.
	GroupNickname string
	// Name is their name, answered only when groupchat/get asks for it
	// (need_name 1).
	Name string
}

// The limits of the group chat APIs (document/path/93414, 92127).
const (
	maxGroupChatLimit  = catalog.GroupChatListLimit   // groupchat/list limit, at least 1
	maxGroupChatOwners = catalog.GroupChatListOwners  // owner_filter.userid_list
	maxVisibleNoFilter = 1000                         // visible members over which 81017 needs an owner filter
	maxTransferChats   = catalog.GroupChatTransferIDs // groupchat/transfer chat_id_list
	groupChatInherited = 3                            // GroupChat.Status once handed over
)

// AddGroupChat adds group chat g to corp corpID, or replaces the one with
// its ChatID. The Server keeps a copy of g.
func (s *Server) AddGroupChat(corpID string, g GroupChat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	if c.groupChats == nil {
		c.groupChats = make(map[string]*GroupChat)
	}
	c.groupChats[g.ChatID] = cloneGroupChat(&g)
}

// GroupChat returns a copy of group chat chatID of corp corpID, and whether
// there is one.
func (s *Server) GroupChat(corpID, chatID string) (GroupChat, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil || c.groupChats[chatID] == nil {
		return GroupChat{}, false
	}
	return *cloneGroupChat(c.groupChats[chatID]), true
}

func cloneGroupChat(g *GroupChat) *GroupChat {
	out := *g
	out.Members = slices.Clone(g.Members)
	out.Admins = slices.Clone(g.Admins)
	return &out
}

// knownMembers returns the distinct userids the corp knows, in lower case
// (userids are case-insensitive): its contacts, the members with customers,
// and the owners and member-type members of its group chats. The Server
// takes them all as visible to the app.
func (c *corp) knownMembers() map[string]bool {
	seen := make(map[string]bool)
	add := func(u string) {
		if u != "" {
			seen[strings.ToLower(u)] = true
		}
	}
	for u := range c.users {
		add(u)
	}
	for u := range c.customers {
		add(u)
	}
	for _, g := range c.groupChats {
		add(g.Owner)
		for _, m := range g.Members {
			if m.Type == 1 {
				add(m.UserID)
			}
		}
	}
	return seen
}

// groupChatListRequest is groupchat/list's body. The legacy offset paging
// is not served.
type groupChatListRequest struct {
	StatusFilter int `json:"status_filter"`
	OwnerFilter  *struct {
		UserIDList []string `json:"userid_list"`
	} `json:"owner_filter"`
	Cursor string `json:"cursor"`
	Limit  *int   `json:"limit"`
}

type groupChatRef struct {
	ChatID string `json:"chat_id"`
	Status int    `json:"status"`
}

type groupChatListAnswer struct {
	status
	GroupChatList []groupChatRef `json:"group_chat_list"`
	NextCursor    string         `json:"next_cursor"`
}

// GroupChats registers the customer group chat (客户群) APIs.
func (handlerSets) GroupChats() handlers {
	return handlers{
		catalog.GroupChatList:     (*corp).groupChatList,
		catalog.GroupChatGet:      (*corp).groupChatGet,
		catalog.GroupChatTransfer: (*corp).groupChatTransfer,
	}
}

// groupChatList answers one page of the corp's group chats, sorted by
// chat_id, as groupchat/list (document/path/93414) does: limit 1 to 1,000,
// at most 100 owners, and 81017 without an owner filter when the corp has
// over 1,000 members. The cursor is opaque and names the filter it was
// answered for: one reused with another filter is refused.
func (c *corp) groupChatList(in *input) (any, *apiError) {
	var req groupChatListRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	var owners []string
	if req.OwnerFilter != nil {
		owners = req.OwnerFilter.UserIDList
	}
	switch {
	case req.Limit == nil || *req.Limit < 1 || *req.Limit > maxGroupChatLimit:
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, limit must be 1 to %d", maxGroupChatLimit)
	case req.StatusFilter < 0 || req.StatusFilter > groupChatInherited:
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, status_filter must be 0 to %d", groupChatInherited)
	case len(owners) > maxGroupChatOwners:
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, owner_filter.userid_list exceeds %d", maxGroupChatOwners)
	case slices.Contains(owners, ""):
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, empty userid in owner_filter.userid_list")
	case len(owners) == 0 && len(c.knownMembers()) > maxVisibleNoFilter:
		return nil, errf(catalog.CodeGroupChatOwnerFilterRequired, "owner_filter required: more than %d members visible", maxVisibleNoFilter)
	}
	keep := make(map[string]bool, len(owners))
	for _, o := range owners {
		keep[strings.ToLower(o)] = true
	}
	scope := fmt.Sprintf("groupchat/list\x00%s\x00%d\x00%s", c.id, req.StatusFilter, strings.Join(sortedKeys(keep), "\x00"))
	offset, ok := readCursor(scope, req.Cursor)
	if !ok {
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, invalid cursor")
	}
	var match []groupChatRef
	for _, id := range slices.Sorted(maps.Keys(c.groupChats)) {
		g := c.groupChats[id]
		if (req.StatusFilter == 0 || g.Status == req.StatusFilter) && (len(keep) == 0 || keep[strings.ToLower(g.Owner)]) {
			match = append(match, groupChatRef{ChatID: g.ChatID, Status: g.Status})
		}
	}
	out := groupChatListAnswer{status: okStatus("ok"), GroupChatList: []groupChatRef{}}
	if offset < len(match) {
		end := min(offset+*req.Limit, len(match))
		out.GroupChatList = match[offset:end]
		if end < len(match) {
			out.NextCursor = makeCursor(scope, end)
		}
	}
	return out, nil
}

type groupChatGetRequest struct {
	ChatID   string `json:"chat_id"`
	NeedName *int   `json:"need_name"`
}

type groupChatMemberJSON struct {
	UserID        string      `json:"userid"`
	Type          int         `json:"type"`
	UnionID       string      `json:"unionid,omitempty"`
	JoinTime      int64       `json:"join_time"`
	JoinScene     int         `json:"join_scene"`
	Invitor       *userIDJSON `json:"invitor,omitempty"`
	GroupNickname string      `json:"group_nickname"`
	Name          string      `json:"name,omitempty"`
}

type userIDJSON struct {
	UserID string `json:"userid"`
}

type groupChatJSON struct {
	ChatID        string                `json:"chat_id"`
	Name          string                `json:"name"`
	Owner         string                `json:"owner"`
	CreateTime    int64                 `json:"create_time"`
	Notice        string                `json:"notice"`
	MemberList    []groupChatMemberJSON `json:"member_list"`
	AdminList     []userIDJSON          `json:"admin_list"`
	MemberVersion string                `json:"member_version"`
}

type groupChatGetAnswer struct {
	status
	GroupChat groupChatJSON `json:"group_chat"`
}

// groupChatGet answers one group chat (groupchat/get, document/path/96338),
// with its members' names when need_name is 1. An unknown chat_id answers
// 40050 (WeCom's "chatid does not exist").
func (c *corp) groupChatGet(in *input) (any, *apiError) {
	var req groupChatGetRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	switch {
	case req.ChatID == "":
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, chat_id missing")
	case req.NeedName != nil && *req.NeedName != 0 && *req.NeedName != 1:
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, need_name must be 0 or 1")
	}
	g := c.groupChats[req.ChatID]
	if g == nil {
		return nil, errf(catalog.CodeGroupChatNotFound, "chatid not found")
	}
	names := req.NeedName != nil && *req.NeedName == 1
	out := groupChatJSON{ChatID: g.ChatID, Name: g.Name, Owner: g.Owner, CreateTime: g.CreateTime, Notice: g.Notice,
		MemberList: []groupChatMemberJSON{}, AdminList: []userIDJSON{}, MemberVersion: g.MemberVersion}
	for _, m := range g.Members {
		j := groupChatMemberJSON{UserID: m.UserID, Type: m.Type, UnionID: m.UnionID, JoinTime: m.JoinTime,
			JoinScene: m.JoinScene, GroupNickname: m.GroupNickname}
		if m.Invitor != "" {
			j.Invitor = &userIDJSON{UserID: m.Invitor}
		}
		if names {
			j.Name = m.Name
		}
		out.MemberList = append(out.MemberList, j)
	}
	for _, a := range g.Admins {
		out.AdminList = append(out.AdminList, userIDJSON{UserID: a})
	}
	return groupChatGetAnswer{status: okStatus("ok"), GroupChat: out}, nil
}

type groupChatTransferRequest struct {
	ChatIDList []string `json:"chat_id_list"`
	NewOwner   string   `json:"new_owner"`
}

type failedChat struct {
	ChatID  string `json:"chat_id"`
	ErrCode int    `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

type groupChatTransferAnswer struct {
	status
	FailedChatList []failedChat `json:"failed_chat_list"`
}

// groupChatTransfer hands groups whose owner left to new_owner
// (groupchat/transfer, document/path/92127): 1 to 100 chat ids, a
// new_owner the corp knows (46004 otherwise). Each group it cannot move is
// listed in failed_chat_list with its own errcode, the others move: an
// unknown chat_id 40050; a group whose owner has not left (state 0 or 3,
// which includes one new_owner already owns) 90500, as WeCom answers it.
// A group moved is in state 3 and groupchat/get shows its new owner.
func (c *corp) groupChatTransfer(in *input) (any, *apiError) {
	var req groupChatTransferRequest
	if e := in.decode(&req); e != nil {
		return nil, e
	}
	switch {
	case len(req.ChatIDList) == 0 || len(req.ChatIDList) > maxTransferChats:
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, chat_id_list must hold 1 to %d ids", maxTransferChats)
	case req.NewOwner == "":
		return nil, errf(catalog.CodeInvalidParam, "invalid parameter, new_owner missing")
	case !c.knownMembers()[strings.ToLower(req.NewOwner)]:
		return nil, errf(catalog.CodeUserNotFound, "userid not found")
	}
	out := groupChatTransferAnswer{status: okStatus("ok"), FailedChatList: []failedChat{}}
	for _, id := range req.ChatIDList {
		g := c.groupChats[id]
		switch {
		case g == nil:
			out.FailedChatList = append(out.FailedChatList, failedChat{ChatID: id, ErrCode: catalog.CodeGroupChatNotFound, ErrMsg: "chatid not found"})
		case strings.EqualFold(g.Owner, req.NewOwner) || (g.Status != 1 && g.Status != 2):
			out.FailedChatList = append(out.FailedChatList, failedChat{ChatID: id, ErrCode: catalog.CodeChatOwnerNotResigned, ErrMsg: "the owner of this chat is not resigned"})
		default:
			g.Owner, g.Status = req.NewOwner, groupChatInherited
		}
	}
	return out, nil
}
