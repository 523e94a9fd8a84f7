package wecom

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/wecomkit/wecom/catalog"
)

// The limits of the customer group chat APIs.
const (
	// MaxGroupChatLimit is the most group chats one groupchat/list call
	// answers (document/path/93414), and GroupChatListRequest.Limit's
	// default.
	MaxGroupChatLimit = catalog.GroupChatListLimit
	// MaxGroupChatOwnersPerCall is the most owners one groupchat/list call
	// filters on; GroupChats walks a longer list in calls of this many.
	MaxGroupChatOwnersPerCall = catalog.GroupChatListOwners
	// MaxGroupChatsPerTransfer is the most group chats one
	// groupchat/transfer call hands over (document/path/92127);
	// TransferGroupChats splits a longer list.
	MaxGroupChatsPerTransfer = catalog.GroupChatTransferIDs
)

// Where a group chat stands in the handover of a departed owner's groups
// (离职继承): GroupChatRef.Status, and GroupChatListRequest.StatusFilter,
// where 0 means every group.
const (
	GroupChatOwnerActive   = 0 // the owner is a member of the corp
	GroupChatOwnerResigned = 1 // the owner left; the group waits for a new one
	GroupChatInheriting    = 2 // the group is being handed over
	GroupChatInherited     = 3 // the group was handed over
)

// GroupChatListRequest selects the customer group chats (客户群) that
// GroupChats walks.
type GroupChatListRequest struct {
	// StatusFilter keeps the groups in one handover state
	// (GroupChatOwnerResigned, GroupChatInheriting, GroupChatInherited); 0
	// keeps every group.
	StatusFilter int
	// OwnerUserIDs keeps the groups these members own. WeCom filters on at
	// most MaxGroupChatOwnersPerCall owners a call: GroupChats walks a
	// longer list in calls of that many, one after another, and drops
	// repeated userids (case-insensitive, as userids are), so that every
	// group comes once. Empty means every group the app can see, which
	// WeCom refuses with 81017 (CodeGroupChatOwnerFilterRequired) when the
	// app sees over 1,000 members; the groups of members who left are
	// found only by owner.
	OwnerUserIDs []string
	// Limit is how many groups a call asks for, 1 to MaxGroupChatLimit; 0
	// means MaxGroupChatLimit.
	Limit int
}

// GroupChatRef is a group chat as groupchat/list names it.
type GroupChatRef struct {
	ChatID string `json:"chat_id"`
	// Status is where the group stands in the handover of a departed
	// owner's groups: GroupChatOwnerActive, GroupChatOwnerResigned,
	// GroupChatInheriting or GroupChatInherited.
	Status int `json:"status"`
}

// GroupChat is a customer group chat and its members, as groupchat/get
// answers it.
type GroupChat struct {
	ChatID string `json:"chat_id"`
	Name   string `json:"name"`
	// Owner is the userid of the member who owns the group.
	Owner string `json:"owner"`
	// CreateTime is when the group was created, in Unix seconds.
	CreateTime int64             `json:"create_time"`
	Notice     string            `json:"notice"`
	Members    []GroupChatMember `json:"member_list"`
	Admins     []GroupChatAdmin  `json:"admin_list"`
	// MemberVersion changes whenever the members change; compare it to
	// tell whether the member list is the one seen before.
	MemberVersion string `json:"member_version"`
}

// The kinds of group chat member (GroupChatMember.Type).
const (
	GroupChatMemberUser     = 1 // a member of the corp
	GroupChatMemberExternal = 2 // an external contact
)

// GroupChatMember is one member of a group chat.
type GroupChatMember struct {
	// UserID is a member's userid (Type GroupChatMemberUser) or an external
	// contact's external_userid (Type GroupChatMemberExternal).
	UserID string `json:"userid"`
	Type   int    `json:"type"`
	// UnionID is an external contact's WeChat unionid, when WeCom gives it.
	UnionID string `json:"unionid,omitempty"`
	// JoinTime is when they joined, in Unix seconds.
	JoinTime int64 `json:"join_time"`
	// JoinScene is how they joined: 1 invited, 2 by link, 3 by QR code.
	JoinScene int `json:"join_scene"`
	// Invitor is the member who invited them; its UserID is empty when no
	// member of the corp did.
	Invitor GroupChatInvitor `json:"invitor"`
	// GroupNickname is their nickname in the group.
	GroupNickname string `json:"group_nickname"`
	// Name is their name, only when GroupChat was asked for names.
	Name string `json:"name,omitempty"`
}

// GroupChatInvitor is the member who invited someone into a group chat.
type GroupChatInvitor struct {
	UserID string `json:"userid"`
}

// GroupChatAdmin is an administrator of a group chat.
type GroupChatAdmin struct {
	UserID string `json:"userid"`
}

// GroupChatTransferFailure is a group chat groupchat/transfer did not hand
// over, and WeCom's reason: such as CodeChatOwnerNotResigned, or 40050 for
// a chat id WeCom does not know.
type GroupChatTransferFailure struct {
	ChatID  string `json:"chat_id"`
	Code    int    `json:"errcode"`
	Message string `json:"errmsg"`
}

// GroupChats walks the customer group chats req selects through
// externalcontact/groupchat/list (document/path/93414), Limit groups a
// call, fetched as the loop asks for them, in WeCom's order, each group
// once. With more than MaxGroupChatOwnersPerCall owners, the owners are
// walked in chunks of that many, one chunk after the other.
//
// The walk stops when the loop breaks, at the first error (yielded once,
// with the zero GroupChatRef), and when ctx ends between pages. Invalid
// input is that first error (ErrInvalidRequest). When WeCom refuses to list
// without an owner filter (81017), the error says to give OwnerUserIDs, and
// errors.As still finds its *APIError, with Code
// CodeGroupChatOwnerFilterRequired.
func (s *CustomerService) GroupChats(ctx context.Context, req GroupChatListRequest) iter.Seq2[GroupChatRef, error] {
	return func(yield func(GroupChatRef, error) bool) {
		owners, err := req.validate()
		if err != nil {
			yield(GroupChatRef{}, err)
			return
		}
		chunks := max(1, (len(owners)+MaxGroupChatOwnersPerCall-1)/MaxGroupChatOwnersPerCall)
		for i := range chunks {
			var filter *groupChatOwnerFilter
			if part := chunk(owners, i, MaxGroupChatOwnersPerCall); len(part) > 0 {
				filter = &groupChatOwnerFilter{UserIDList: part}
			}
			fetch := func(ctx context.Context, cursor string) (page[GroupChatRef], error) {
				body := groupChatListBody{StatusFilter: req.StatusFilter, OwnerFilter: filter, Cursor: cursor, Limit: cmp.Or(req.Limit, MaxGroupChatLimit)}
				var out groupChatListAnswer
				if err := s.p.perform(ctx, &call{id: catalog.GroupChatList, body: body, out: &out}); err != nil {
					return page[GroupChatRef]{}, groupChatListError(err)
				}
				return page[GroupChatRef]{items: out.GroupChatList, next: out.NextCursor}, nil
			}
			for g, err := range walk(ctx, fetch) {
				if err != nil && chunks > 1 {
					err = fmt.Errorf("wecom: group chats: owners %d to %d of %d: %w",
						i*MaxGroupChatOwnersPerCall+1, min((i+1)*MaxGroupChatOwnersPerCall, len(owners)), len(owners), err)
				}
				if !yield(g, err) || err != nil {
					return
				}
			}
		}
	}
}

// validate checks r and returns its owners without repeats.
func (r GroupChatListRequest) validate() ([]string, error) {
	switch {
	case r.StatusFilter < 0 || r.StatusFilter > GroupChatInherited:
		return nil, invalid("status_filter", "%d is not 0 to %d", r.StatusFilter, GroupChatInherited)
	case r.Limit < 0 || r.Limit > MaxGroupChatLimit:
		return nil, invalid("limit", "%d is not 1 to %d (0 for %[2]d)", r.Limit, MaxGroupChatLimit)
	}
	if i := slices.Index(r.OwnerUserIDs, ""); i >= 0 {
		return nil, invalid("owner_filter.userid_list", "userid %d is empty", i)
	}
	return distinctUserIDs(r.OwnerUserIDs), nil
}

// groupChatListError says what to do about 81017, keeping the *APIError.
func groupChatListError(err error) error {
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == CodeGroupChatOwnerFilterRequired {
		return fmt.Errorf("wecom: group chats: give OwnerUserIDs: without an owner filter WeCom refuses corps with over 1,000 visible members: %w", err)
	}
	return err
}

type groupChatListBody struct {
	StatusFilter int                   `json:"status_filter"`
	OwnerFilter  *groupChatOwnerFilter `json:"owner_filter,omitempty"`
	Cursor       string                `json:"cursor,omitempty"`
	Limit        int                   `json:"limit"`
}

type groupChatOwnerFilter struct {
	UserIDList []string `json:"userid_list"`
}

type groupChatListAnswer struct {
	GroupChatList []GroupChatRef `json:"group_chat_list"`
	NextCursor    string         `json:"next_cursor"`
}

// GroupChat returns group chat chatID with its members and admins
// (externalcontact/groupchat/get, document/path/96338); with needName,
// each member's name too. WeCom updates it some time after a change, so it
// may lag the change events.
func (s *CustomerService) GroupChat(ctx context.Context, chatID string, needName bool) (*GroupChat, error) {
	if chatID == "" {
		return nil, invalid("chat_id", "required")
	}
	body := groupChatGetBody{ChatID: chatID, NeedName: boolInt(needName)}
	var out groupChatGetAnswer
	if err := s.p.perform(ctx, &call{id: catalog.GroupChatGet, body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out.GroupChat, nil
}

type groupChatGetBody struct {
	ChatID   string `json:"chat_id"`
	NeedName int    `json:"need_name"`
}

type groupChatGetAnswer struct {
	GroupChat GroupChat `json:"group_chat"`
}

func (a *groupChatGetAnswer) validate() error {
	if a.GroupChat.ChatID == "" {
		return errors.New("groupchat/get answered no group_chat")
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TransferGroupChats hands the group chats chatIDs, whose owner left the
// corp, to member newOwner (externalcontact/groupchat/transfer,
// document/path/92127), in calls of MaxGroupChatsPerTransfer, one after
// another. WeCom moves at most 300 groups a day from one former owner. A
// chat id given more than once (exactly the same) is sent once, where it
// first appears: sent again, WeCom would report the group it just moved as
// failed (90500).
//
// The groups WeCom did not move come back with its reason for each, from
// every call; they are a result, not an error. An error of a whole call
// ends the transfer: it returns the failures of the calls before, and an
// error naming the call (when there are several), whose groups may or may
// not have moved (GroupChat tells). The calls are not repeated after an
// error of unknown outcome (see catalog.GroupChatTransfer).
func (s *CustomerService) TransferGroupChats(ctx context.Context, chatIDs []string, newOwner string) ([]GroupChatTransferFailure, error) {
	switch i := slices.Index(chatIDs, ""); {
	case len(chatIDs) == 0:
		return nil, invalid("chat_id_list", "no chat ids")
	case i >= 0:
		return nil, invalid("chat_id_list", "chat id %d is empty", i)
	case newOwner == "":
		return nil, invalid("new_owner", "required")
	}
	chatIDs = distinctIDs(chatIDs)
	calls := (len(chatIDs) + MaxGroupChatsPerTransfer - 1) / MaxGroupChatsPerTransfer
	var failed []GroupChatTransferFailure
	for i := range calls {
		body := groupChatTransferBody{ChatIDList: chunk(chatIDs, i, MaxGroupChatsPerTransfer), NewOwner: newOwner}
		var out groupChatTransferAnswer
		err := s.p.perform(ctx, &call{id: catalog.GroupChatTransfer, body: body, out: &out})
		switch {
		case err != nil && calls == 1:
			return failed, err
		case err != nil:
			return failed, fmt.Errorf("wecom: transfer group chats: call %d of %d (chats %d to %d of %d): %w",
				i+1, calls, i*MaxGroupChatsPerTransfer+1, i*MaxGroupChatsPerTransfer+len(body.ChatIDList), len(chatIDs), err)
		}
		failed = append(failed, out.FailedChatList...)
	}
	return failed, nil
}

type groupChatTransferBody struct {
	ChatIDList []string `json:"chat_id_list"`
	NewOwner   string   `json:"new_owner"`
}

type groupChatTransferAnswer struct {
	FailedChatList []GroupChatTransferFailure `json:"failed_chat_list"`
}
