package wecom

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"strconv"

	"github.com/wecomkit/wecom/catalog"
)

// UserService calls the directory's member (通讯录成员) APIs: reading a
// member, walking the whole directory, the ids that name a member
// elsewhere, and the writes (with the contact-sync secret, 通讯录同步).
type UserService service

// MaxListIDLimit is the most rows user/list_id answers a page.
const MaxListIDLimit = 10000

// Get reads member userID (user/get, document/path/90196). See Member for
// the fields WeCom withholds from newer apps.
func (s *UserService) Get(ctx context.Context, userID string) (*Member, error) {
	if userID == "" {
		return nil, invalid("userid", "required")
	}
	var out memberAnswer
	if err := s.p.perform(ctx, &call{id: catalog.UserGet, query: url.Values{"userid": {userID}}, out: &out}); err != nil {
		return nil, err
	}
	return &out.Member, nil
}

type memberAnswer struct {
	Member
}

func (a *memberAnswer) validate() error {
	if a.UserID == "" {
		return errors.New("no userid")
	}
	return nil
}

// UserDepartments is a member as user/list_id names it: its id (the
// open_userid for a third-party app) and the departments it belongs to.
type UserDepartments struct {
	UserID      string
	Departments []int
}

// IDs walks the whole directory with user/list_id (document/path/96067),
// pages of limit rows (0: MaxListIDLimit), and yields each member once with
// all its departments. WeCom answers a row per member and department, so a
// member in three departments is three rows, which a page boundary may
// split: IDs joins a member's rows, holding back the last member of a page
// until the next page shows whether more of its rows follow. The walk
// stops at the first error, which it yields; breaking out of the loop
// stops it at once.
//
// It is the way to list the directory for the contact-sync secret: since
// 2022-08-15, user/list and user/simplelist are closed to it from IPs
// added after that day (see List).
func (s *UserService) IDs(ctx context.Context, limit int) iter.Seq2[UserDepartments, error] {
	return func(yield func(UserDepartments, error) bool) {
		if limit < 0 || limit > MaxListIDLimit {
			yield(UserDepartments{}, invalid("limit", "%d, not in 0 to %d", limit, MaxListIDLimit))
			return
		}
		if limit == 0 {
			limit = MaxListIDLimit
		}
		var cur *UserDepartments
		for row, err := range walk(ctx, func(ctx context.Context, cursor string) (page[deptUser], error) {
			var out listIDAnswer
			err := s.p.perform(ctx, &call{id: catalog.UserListID, body: listIDRequest{Cursor: cursor, Limit: limit}, out: &out})
			return page[deptUser]{items: out.DeptUser, next: out.NextCursor}, err
		}) {
			if err != nil {
				yield(UserDepartments{}, err)
				return
			}
			id := row.id()
			if cur != nil && cur.UserID == id {
				cur.Departments = append(cur.Departments, row.Department)
				continue
			}
			if cur != nil && !yield(*cur, nil) {
				return
			}
			cur = &UserDepartments{UserID: id, Departments: []int{row.Department}}
		}
		if cur != nil {
			yield(*cur, nil)
		}
	}
}

type listIDRequest struct {
	Cursor string `json:"cursor,omitempty"`
	Limit  int    `json:"limit"`
}

type listIDAnswer struct {
	NextCursor string     `json:"next_cursor"`
	DeptUser   []deptUser `json:"dept_user"`
}

// deptUser is a row of user/list_id: a self-built app's rows name the
// userid, a third-party app's the open_userid.
type deptUser struct {
	UserID     string `json:"userid"`
	OpenUserID string `json:"open_userid"`
	Department int    `json:"department"`
}

func (r deptUser) id() string {
	if r.UserID != "" {
		return r.UserID
	}
	return r.OpenUserID
}

func (a *listIDAnswer) validate() error {
	for _, r := range a.DeptUser {
		if r.id() == "" {
			return errors.New("a dept_user row without userid or open_userid")
		}
	}
	return nil
}

// List returns the members of department departmentID with their details
// (user/list, document/path/90201). Since 2022-08-15 WeCom refuses it to
// the contact-sync secret called from an IP added after that day (48009,
// document/path/90344): the error then says so, and IDs with Get is the
// way.
func (s *UserService) List(ctx context.Context, departmentID int) ([]Member, error) {
	var out struct {
		UserList []Member `json:"userlist"`
	}
	err := s.listDepartment(ctx, catalog.UserList, departmentID, &out)
	return out.UserList, err
}

// SimpleList returns the members of department departmentID, their ids,
// names and departments only (user/simplelist, document/path/90200). It is
// closed as List is.
func (s *UserService) SimpleList(ctx context.Context, departmentID int) ([]UserSummary, error) {
	var out struct {
		UserList []UserSummary `json:"userlist"`
	}
	err := s.listDepartment(ctx, catalog.UserSimpleList, departmentID, &out)
	return out.UserList, err
}

// UserSummary is a member as user/simplelist names it.
type UserSummary struct {
	UserID      string `json:"userid"`
	Name        string `json:"name"`
	Departments []int  `json:"department"`
	OpenUserID  string `json:"open_userid,omitempty"`
}

// listDepartment calls a department listing of the closed kind (List,
// SimpleList).
func (s *UserService) listDepartment(ctx context.Context, id catalog.ID, departmentID int, out any) error {
	if departmentID <= 0 {
		return invalid("department_id", "%d is not positive", departmentID)
	}
	err := s.p.perform(ctx, &call{id: id, query: url.Values{"department_id": {strconv.Itoa(departmentID)}}, out: out})
	if errcodeOf(err) == CodeContactAPIClosed {
		return fmt.Errorf("wecom: %s is closed to this caller (since 2022-08-15, to the contact-sync secret from an IP added later): walk the directory with Users.IDs (user/list_id) and read members with Users.Get: %w", id, err)
	}
	return err
}

// ByMobile returns the userid of the member whose mobile is mobile
// (user/getuserid, document/path/95402).
func (s *UserService) ByMobile(ctx context.Context, mobile string) (string, error) {
	if mobile == "" {
		return "", invalid("mobile", "required")
	}
	return s.userID(ctx, catalog.UserIDByMobile, map[string]string{"mobile": mobile})
}

// The kinds of a member's email, for ByEmail.
const (
	EmailCorp     = 1 // the corp mailbox (biz_mail)
	EmailPersonal = 2 // the member's own email
)

// ByEmail returns the userid of the member whose email of kind emailType
// (EmailCorp or EmailPersonal) is email (user/get_userid_by_email,
// document/path/95895).
func (s *UserService) ByEmail(ctx context.Context, email string, emailType int) (string, error) {
	switch {
	case email == "":
		return "", invalid("email", "required")
	case emailType != EmailCorp && emailType != EmailPersonal:
		return "", invalid("email_type", "%d is not EmailCorp or EmailPersonal", emailType)
	}
	return s.userID(ctx, catalog.UserIDByEmail, map[string]any{"email": email, "email_type": emailType})
}

// FromOpenID returns the userid of the member whose WeChat Pay openid is
// openID (user/convert_to_userid, document/path/90202).
func (s *UserService) FromOpenID(ctx context.Context, openID string) (string, error) {
	if openID == "" {
		return "", invalid("openid", "required")
	}
	return s.userID(ctx, catalog.OpenIDToUser, map[string]string{"openid": openID})
}

// userID makes a call that answers a userid.
func (s *UserService) userID(ctx context.Context, id catalog.ID, body any) (string, error) {
	var out userIDAnswer
	if err := s.p.perform(ctx, &call{id: id, body: body, out: &out}); err != nil {
		return "", err
	}
	return out.UserID, nil
}

type userIDAnswer struct {
	UserID string `json:"userid"`
}

func (a *userIDAnswer) validate() error {
	if a.UserID == "" {
		return errors.New("no userid")
	}
	return nil
}

// ToOpenID returns the WeChat Pay openid of member userID
// (user/convert_to_openid, document/path/90202).
func (s *UserService) ToOpenID(ctx context.Context, userID string) (string, error) {
	if userID == "" {
		return "", invalid("userid", "required")
	}
	var out openIDAnswer
	if err := s.p.perform(ctx, &call{id: catalog.UserToOpenID, body: map[string]string{"userid": userID}, out: &out}); err != nil {
		return "", err
	}
	return out.OpenID, nil
}

type openIDAnswer struct {
	OpenID string `json:"openid"`
}

func (a *openIDAnswer) validate() error {
	if a.OpenID == "" {
		return errors.New("no openid")
	}
	return nil
}
