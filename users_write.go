package wecom

import (
	"context"
	"net/url"
	"unicode/utf8"

	"github.com/wecomkit/wecom/catalog"
)

// UserRequest is a member to create (user/create, document/path/90195) or
// the changes to one (user/update, document/path/90197). On an update a
// nil field, or an empty list, is left as it is.
type UserRequest struct {
	// UserID names the member: 1 to 64 bytes, unique in the corp, without
	// case.
	UserID         string    `json:"userid"`
	Name           *string   `json:"name,omitempty"`
	Alias          *string   `json:"alias,omitempty"`
	Mobile         *string   `json:"mobile,omitempty"`
	Departments    []int     `json:"department,omitempty"`
	Order          []int     `json:"order,omitempty"`
	Position       *string   `json:"position,omitempty"`
	Gender         *Gender   `json:"gender,omitempty"`
	Email          *string   `json:"email,omitempty"`
	BizMail        *string   `json:"biz_mail,omitempty"`
	IsLeaderInDept []int     `json:"is_leader_in_dept,omitempty"`
	DirectLeader   []string  `json:"direct_leader,omitempty"`
	Enable         *int      `json:"enable,omitempty"` // 1 enabled, 0 disabled
	AvatarMediaID  string    `json:"avatar_mediaid,omitempty"`
	Telephone      *string   `json:"telephone,omitempty"`
	Address        *string   `json:"address,omitempty"`
	MainDepartment int       `json:"main_department,omitempty"`
	ExtAttr        *ExtAttrs `json:"extattr,omitempty"`
	// ToInvite, on a create, says whether WeCom invites the new member
	// (default true).
	ToInvite         *bool            `json:"to_invite,omitempty"`
	ExternalPosition *string          `json:"external_position,omitempty"`
	ExternalProfile  *ExternalProfile `json:"external_profile,omitempty"`
}

// MaxUserIDLen is the most bytes of a userid.
const MaxUserIDLen = 64

func (r UserRequest) check(create bool) error {
	switch {
	case r.UserID == "" || len(r.UserID) > MaxUserIDLen:
		return invalid("userid", "%d bytes, want 1 to %d", len(r.UserID), MaxUserIDLen)
	case create && (r.Name == nil || *r.Name == ""):
		return invalid("name", "required")
	case r.Name != nil && utf8.RuneCountInString(*r.Name) > 64:
		return invalid("name", "%d characters, at most 64", utf8.RuneCountInString(*r.Name))
	case len(r.Order) > 0 && len(r.Order) != len(r.Departments),
		len(r.IsLeaderInDept) > 0 && len(r.IsLeaderInDept) != len(r.Departments):
		return invalid("department", "order and is_leader_in_dept, when given, have one entry per department")
	case len(r.Departments) > 100:
		return invalid("department", "%d departments, at most 100", len(r.Departments))
	}
	return nil
}

// Create adds a member (user/create). It is not repeated after an answer
// that never came: a second create fails on the member the first made
// (60102, CodeUserIDExists), which then says it was done.
func (s *UserService) Create(ctx context.Context, r UserRequest) error {
	if err := r.check(true); err != nil {
		return err
	}
	return s.p.perform(ctx, &call{id: catalog.UserCreate, body: r})
}

// Update changes a member (user/update): only the fields r sets.
func (s *UserService) Update(ctx context.Context, r UserRequest) error {
	if err := r.check(false); err != nil {
		return err
	}
	if r.ToInvite != nil {
		return invalid("to_invite", "on a create only")
	}
	return s.p.perform(ctx, &call{id: catalog.UserUpdate, body: r})
}

// Delete removes member userID (user/delete, document/path/90198). It is
// not repeated after an answer that never came: a second delete fails
// with 60111 (CodeNoSuchUserID), which then says it was done.
func (s *UserService) Delete(ctx context.Context, userID string) error {
	if userID == "" {
		return invalid("userid", "required")
	}
	return s.p.perform(ctx, &call{id: catalog.UserDelete, query: url.Values{"userid": {userID}}})
}

// MaxBatchDelete is the most members user/batchdelete removes a call.
const MaxBatchDelete = 200

// BatchDelete removes up to MaxBatchDelete members in one call
// (user/batchdelete, document/path/90199).
func (s *UserService) BatchDelete(ctx context.Context, userIDs []string) error {
	ids := distinctUserIDs(userIDs)
	switch {
	case len(ids) == 0:
		return invalid("useridlist", "empty")
	case len(ids) > MaxBatchDelete:
		return invalid("useridlist", "%d members, at most %d a call", len(ids), MaxBatchDelete)
	}
	return s.p.perform(ctx, &call{id: catalog.UserBatchDelete, body: map[string][]string{"useridlist": ids}})
}

// InviteRequest names whom batch/invite invites to join WeCom
// (document/path/90975): at most 1,000 members, 100 departments and 100
// tags.
type InviteRequest struct {
	Users   []string `json:"user,omitempty"`
	Parties []int    `json:"party,omitempty"`
	Tags    []int    `json:"tag,omitempty"`
}

// InviteResult names those of an InviteRequest that WeCom found invalid;
// the others were invited.
type InviteResult struct {
	InvalidUsers   []string `json:"invaliduser"`
	InvalidParties []int    `json:"invalidparty"`
	InvalidTags    []int    `json:"invalidtag"`
}

// Invite invites members to join WeCom (batch/invite). It is not repeated
// after an answer that never came: a repeat would invite them twice.
func (s *UserService) Invite(ctx context.Context, r InviteRequest) (InviteResult, error) {
	switch {
	case len(r.Users)+len(r.Parties)+len(r.Tags) == 0:
		return InviteResult{}, invalid("invite", "no member, department or tag")
	case len(r.Users) > 1000 || len(r.Parties) > 100 || len(r.Tags) > 100:
		return InviteResult{}, invalid("invite", "%d members, %d departments, %d tags: at most 1,000, 100 and 100", len(r.Users), len(r.Parties), len(r.Tags))
	}
	var out InviteResult
	err := s.p.perform(ctx, &call{id: catalog.BatchInvite, body: r, out: &out})
	return out, err
}
