package wecom_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// memberDoc is user/get's answer as document/path/90196 shows it (its
// example, trimmed of what it repeats).
const memberDoc = `{
  "errcode": 0, "errmsg": "ok",
  "userid": "zhangsan", "name": "张三",
  "department": [1, 2], "order": [1, 2],
  "position": "后台工程师",
  "mobile": "13800000000",
  "gender": "1",
  "email": "zhangsan@gzdev.com",
  "biz_mail": "zhangsan@qyycs2.wecom.work",
  "is_leader_in_dept": [1, 0],
  "direct_leader": ["lisi"],
  "avatar": "",
  "thumb_avatar": "http://wx.qlogo.cn/mmopen/ajNVdqHZLLA3WJ6DSZUfiakYe37PKnQhBIeOQBO4czqrnZDS79FH5Wm5m4X69TBicnHFlhiafvDwklOpZeXYQQ2icg/100",
  "telephone": "020-123456",
  "alias": "jackzhang",
  "address": "广州市海珠区新港中路",
  "open_userid": "xxxxxx",
  "main_department": 1,
  "extattr": {"attrs": [
    {"type": 0, "name": "文本名称", "text": {"value": "文本"}},
    {"type": 1, "name": "网页名称", "web": {"url": "http://www.test.com", "title": "标题"}}
  ]},
  "status": 1,
  "qr_code": "https://open.work.weixin.qq.com/wwopen/userQRCode?vcode=xxx",
  "external_position": "产品经理",
  "external_profile": {
    "external_corp_name": "企业简称",
    "wechat_channels": {"nickname": "视频号名称", "status": 1},
    "external_attr": [
      {"type": 0, "name": "文本名称", "text": {"value": "文本"}},
      {"type": 2, "name": "测试app", "miniprogram": {"appid": "wx8bd80126147dFAKE", "pagepath": "/index", "title": "my miniprogram"}}
    ]
  }
}`

// answerOn returns a client whose call of path gets body (gettoken answers
// a token).
func answerOn(t *testing.T, method, path, body string) *wecom.Client {
	t.Helper()
	mt := tokenTransport()
	mt.RegisterResponder(method, testBase+path, httpmock.NewStringResponder(http.StatusOK, body))
	return setup(t, wecom.WithTransport(mt))
}

// A member is read as WeCom documents it: lowercase keys, the gender a
// string, the extended and external attributes of each kind; a field sent
// empty is "", not withheld.
func TestUserGetReadsTheDocumentedAnswer(t *testing.T) {
	t.Parallel()
	c := answerOn(t, http.MethodGet, catalog.UserGet.Path(), memberDoc)
	m, err := c.Users.Get(context.Background(), "zhangsan")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case m.UserID != "zhangsan" || m.Name != "张三" || !slices.Equal(m.Departments, []int{1, 2}) || m.MainDepartment != 1:
		t.Errorf("member %+v", m)
	case m.Gender == nil || *m.Gender != wecom.GenderMale:
		t.Errorf("gender %v, want %q", m.Gender, wecom.GenderMale)
	case m.Mobile == nil || *m.Mobile != "13800000000" || m.Avatar == nil || *m.Avatar != "":
		t.Errorf("mobile %v, avatar %v: want the number, and an avatar sent empty", m.Mobile, m.Avatar)
	case m.ExtAttr == nil || len(m.ExtAttr.Attrs) != 2 || m.ExtAttr.Attrs[1].Web == nil || m.ExtAttr.Attrs[1].Web.Title != "标题":
		t.Errorf("extattr %+v", m.ExtAttr)
	case m.ExternalProfile == nil || m.ExternalProfile.WechatChannels.Nickname != "视频号名称" ||
		m.ExternalProfile.ExternalAttr[1].Type != wecom.AttrKindMiniprogram || m.ExternalProfile.ExternalAttr[1].Miniprogram.AppID != "wx8bd80126147dFAKE":
		t.Errorf("external_profile %+v", m.ExternalProfile)
	}
}

// A field WeCom withholds from a newer app is nil; the others are there.
func TestUserGetWithheldFields(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	srv.AddMembers(testCorp, mock.Member{UserID: "zhangsan", Name: "张三", Mobile: "13800000000", Email: "z@example.com", Gender: "1"})
	srv.WithholdMemberFields(testCorp, true)
	c := setup(t, on(srv))
	m, err := c.Users.Get(context.Background(), "ZhangSan") // userids compare without case
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "张三" || m.Mobile != nil || m.Email != nil || m.Gender != nil || m.Avatar != nil {
		t.Errorf("name %q, mobile %v, email %v, gender %v, avatar %v: want the name and nothing withheld", m.Name, m.Mobile, m.Email, m.Gender, m.Avatar)
	}
	srv.WithholdMemberFields(testCorp, false)
	if m, err = c.Users.Get(context.Background(), "zhangsan"); err != nil || m.Mobile == nil || *m.Mobile != "13800000000" {
		t.Errorf("mobile %v, %v: want it once not withheld", m.Mobile, err)
	}
	if _, err := c.Users.Get(context.Background(), "nobody"); wecomCode(err) != wecom.CodeNoSuchUserID {
		t.Errorf("an unknown member: %v", err)
	}
}

// wecomCode returns the errcode of WeCom's answer in err (0: none).
func wecomCode(err error) int {
	var ae *wecom.APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return 0
}

// IDs yields each member once with all its departments, whatever page
// size splits a member's rows, and so many members as the directory has.
func TestUserIDsJoinsSplitRows(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	srv.SeedDirectory(testCorp, 20, 60)
	want := srv.Members(testCorp)
	if !slices.ContainsFunc(want, func(m mock.Member) bool { return len(m.Departments) > 1 }) {
		t.Fatal("no member is in two departments: nothing to join")
	}
	c := setup(t, on(srv))
	for _, limit := range []int{1, 2, 3, 7, 0} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			var got []wecom.UserDepartments
			for u, err := range c.Users.IDs(context.Background(), limit) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, u)
			}
			if len(got) != len(want) {
				t.Fatalf("%d members, want %d", len(got), len(want))
			}
			for i, u := range got {
				if u.UserID != want[i].UserID || !slices.Equal(u.Departments, want[i].Departments) {
					t.Fatalf("member %d: %+v, want %s in %v", i, u, want[i].UserID, want[i].Departments)
				}
			}
		})
	}
}

// A page that ends between two rows of one member, as WeCom's document
// shows such rows (document/path/96021: open_userid for a third-party
// app), still yields the member once; a cursor answered twice ends the
// walk with ErrCursorLoop.
func TestUserIDsAcrossPages(t *testing.T) {
	t.Parallel()
	pages := map[string]string{
		"":   `{"errcode":0,"errmsg":"ok","next_cursor":"c1","dept_user":[{"open_userid":"woAAAAAAAA","department":1},{"open_userid":"woAAAAAAAA","department":2}]}`,
		"c1": `{"errcode":0,"errmsg":"ok","next_cursor":"c2","dept_user":[{"open_userid":"woAAAAAAAA","department":3},{"open_userid":"woBBBBBBBB","department":2}]}`,
		"c2": `{"errcode":0,"errmsg":"ok","next_cursor":"","dept_user":[]}`,
	}
	var loop atomic.Bool
	mt := tokenTransport()
	mt.RegisterResponder(http.MethodPost, testBase+catalog.UserListID.Path(), func(r *http.Request) (*http.Response, error) {
		var req struct {
			Cursor string `json:"cursor"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			return nil, err
		}
		page := pages[req.Cursor]
		if loop.Load() && req.Cursor == "c2" {
			page = strings.Replace(page, `"next_cursor":""`, `"next_cursor":"c1"`, 1)
		}
		return httpmock.NewStringResponse(http.StatusOK, page), nil
	})
	c := setup(t, wecom.WithTransport(mt))
	var got []wecom.UserDepartments
	for u, err := range c.Users.IDs(context.Background(), 2) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, u)
	}
	want := []wecom.UserDepartments{{UserID: "woAAAAAAAA", Departments: []int{1, 2, 3}}, {UserID: "woBBBBBBBB", Departments: []int{2}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	loop.Store(true)
	var last error
	for _, err := range c.Users.IDs(context.Background(), 2) {
		last = err
	}
	if !errors.Is(last, wecom.ErrCursorLoop) {
		t.Errorf("a cursor answered twice: %v, want ErrCursorLoop", last)
	}
}

// user/list closed to the caller (48009) says what to do instead; the
// code stays WeCom's.
func TestUserListClosed(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	srv.SeedDirectory(testCorp, 2, 5)
	c := setup(t, on(srv))
	ms, err := c.Users.List(context.Background(), 1)
	if err != nil || len(ms) == 0 {
		t.Fatalf("open: %d members, %v", len(ms), err)
	}
	srv.CloseContactLists(testCorp, true)
	for name, call := range map[string]func() error{
		"List":       func() error { _, err := c.Users.List(context.Background(), 1); return err },
		"SimpleList": func() error { _, err := c.Users.SimpleList(context.Background(), 1); return err },
	} {
		err := call()
		if wecomCode(err) != wecom.CodeContactAPIClosed || !strings.Contains(err.Error(), "Users.IDs") {
			t.Errorf("%s closed: %v, want 48009 naming Users.IDs", name, err)
		}
	}
}

// The ids that name a member elsewhere lead back to it.
func TestUserIDLookups(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	srv.AddMembers(testCorp, mock.Member{UserID: "zhangsan", Name: "张三", Mobile: "13430388888", Email: "z@example.com", BizMail: "zhangsan@corp.example"})
	c := setup(t, on(srv))
	ctx := context.Background()
	for name, got := range map[string]func() (string, error){
		"mobile":         func() (string, error) { return c.Users.ByMobile(ctx, "13430388888") },
		"corp email":     func() (string, error) { return c.Users.ByEmail(ctx, "ZhangSan@corp.example", wecom.EmailCorp) },
		"personal email": func() (string, error) { return c.Users.ByEmail(ctx, "z@example.com", wecom.EmailPersonal) },
		"openid": func() (string, error) {
			openID, err := c.Users.ToOpenID(ctx, "zhangsan")
			if err != nil {
				return "", err
			}
			return c.Users.FromOpenID(ctx, openID)
		},
	} {
		if u, err := got(); err != nil || u != "zhangsan" {
			t.Errorf("by %s: %q, %v", name, u, err)
		}
	}
	if _, err := c.Users.ByMobile(ctx, "13900000000"); wecomCode(err) != wecom.CodeUserNotFound {
		t.Errorf("an unknown mobile: %v, want 46004", err)
	}
	if _, err := c.Users.ByEmail(ctx, "z@example.com", 3); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("email type 3: %v, want a refusal before sending", err)
	}
}

// Writes change the directory, and an update changes only what it sets.
func TestUserWrites(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv))
	ctx := context.Background()
	if err := c.Users.Create(ctx, wecom.UserRequest{UserID: "zhangsan", Name: wecom.Ptr("张三"), Mobile: wecom.Ptr("13800000000")}); err != nil {
		t.Fatal(err)
	}
	if err := c.Users.Create(ctx, wecom.UserRequest{UserID: "zhangsan", Name: wecom.Ptr("张三")}); wecomCode(err) != wecom.CodeUserIDExists {
		t.Errorf("a second create: %v, want 60102", err)
	}
	if err := c.Users.Create(ctx, wecom.UserRequest{UserID: "lisi", Name: wecom.Ptr("李四"), Mobile: wecom.Ptr("13800000000")}); wecomCode(err) != wecom.CodeMobileExists {
		t.Errorf("a mobile taken: %v, want 60104", err)
	}
	if err := c.Users.Update(ctx, wecom.UserRequest{UserID: "zhangsan", Position: wecom.Ptr("工程师")}); err != nil {
		t.Fatal(err)
	}
	m, err := c.Users.Get(ctx, "zhangsan")
	if err != nil || m.Name != "张三" || m.Position != "工程师" || *m.Mobile != "13800000000" {
		t.Errorf("after the update: %+v, %v", m, err)
	}
	for _, u := range []string{"a", "b", "c"} {
		if err := c.Users.Create(ctx, wecom.UserRequest{UserID: u, Name: wecom.Ptr(u)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.Users.Invite(ctx, wecom.InviteRequest{Users: []string{"a", "ghost"}, Parties: []int{1, 99}})
	if err != nil || !slices.Equal(res.InvalidUsers, []string{"ghost"}) || !slices.Equal(res.InvalidParties, []int{99}) {
		t.Errorf("invite: %+v, %v", res, err)
	}
	if err := c.Users.BatchDelete(ctx, []string{"a", "B", "b"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Users.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := c.Users.Delete(ctx, "c"); wecomCode(err) != wecom.CodeNoSuchUserID {
		t.Errorf("a second delete: %v, want 60111", err)
	}
	if got := srv.Members(testCorp); len(got) != 1 || got[0].UserID != "zhangsan" {
		t.Errorf("left: %+v, want zhangsan alone", got)
	}
}

// Requests that cannot be right are refused before anything is sent.
func TestUserRequestsRefused(t *testing.T) {
	t.Parallel()
	c := setup(t)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"create without a name": func() error { return c.Users.Create(ctx, wecom.UserRequest{UserID: "u"}) },
		"create without a userid": func() error {
			return c.Users.Create(ctx, wecom.UserRequest{Name: wecom.Ptr("u")})
		},
		"a userid of 65 bytes": func() error {
			return c.Users.Update(ctx, wecom.UserRequest{UserID: strings.Repeat("u", 65)})
		},
		"order not per department": func() error {
			return c.Users.Update(ctx, wecom.UserRequest{UserID: "u", Departments: []int{1, 2}, Order: []int{1}})
		},
		"to_invite on an update": func() error {
			return c.Users.Update(ctx, wecom.UserRequest{UserID: "u", ToInvite: wecom.Ptr(false)})
		},
		"batchdelete of 201": func() error {
			ids := make([]string, 201)
			for i := range ids {
				ids[i] = fmt.Sprint("u", i)
			}
			return c.Users.BatchDelete(ctx, ids)
		},
		"an empty invitation": func() error { _, err := c.Users.Invite(ctx, wecom.InviteRequest{}); return err },
		"list_id limit 10001": func() error {
			for _, err := range c.Users.IDs(ctx, 10001) {
				return err
			}
			return nil
		},
		"the root department deleted": func() error { return c.Departments.Delete(ctx, 1) },
		"a department without a parent": func() error {
			_, err := c.Departments.Create(ctx, wecom.DepartmentRequest{Name: "x"})
			return err
		},
	} {
		if err := call(); !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
}

// Departments are created, read, listed by subtree, moved and deleted; one
// with members is not deleted.
func TestDepartments(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv))
	ctx := context.Background()
	rd, err := c.Departments.Create(ctx, wecom.DepartmentRequest{Name: "研发", ParentID: 1, Order: wecom.Ptr(3)})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.Departments.Create(ctx, wecom.DepartmentRequest{Name: "后台", ParentID: rd})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Departments.Create(ctx, wecom.DepartmentRequest{Name: "后台", ParentID: rd}); wecomCode(err) != wecom.CodeDepartmentNameExists {
		t.Errorf("a name taken: %v, want 60008", err)
	}
	d, err := c.Departments.Get(ctx, sub)
	if err != nil || d.Name != "后台" || d.ParentID != rd {
		t.Errorf("get: %+v, %v", d, err)
	}
	tree, err := c.Departments.List(ctx, rd)
	if err != nil || len(tree) != 2 {
		t.Errorf("the subtree of %d: %+v, %v", rd, tree, err)
	}
	all, err := c.Departments.List(ctx, 0)
	if err != nil || len(all) != 3 {
		t.Errorf("the whole tree: %+v, %v", all, err)
	}
	if err := c.Departments.Update(ctx, wecom.DepartmentRequest{ID: sub, ParentID: 1, Name: "平台"}); err != nil {
		t.Fatal(err)
	}
	srv.AddMembers(testCorp, mock.Member{UserID: "zhangsan", Name: "张三", Departments: []int{sub}})
	if err := c.Departments.Delete(ctx, sub); wecomCode(err) == 0 {
		t.Error("a department with a member was deleted")
	}
	if err := c.Departments.Delete(ctx, rd); err != nil {
		t.Errorf("an empty department: %v", err)
	}
	if _, err := c.Departments.Get(ctx, rd); wecomCode(err) != wecom.CodeDepartmentNotFound {
		t.Errorf("a deleted department: %v, want 60003", err)
	}
}

// The directory's other answers, as WeCom's documents show them, read into
// the typed results; and each request goes where and as the documents say.
func TestDirectoryDocumentedAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name, method string
		id           catalog.ID
		answer       string
		call         func(c *wecom.Client) (any, error)
		want         string // the result, printed with %v
		body         string // the request body the document shows, when a POST
	}{
		{"department/simplelist (95350)", http.MethodGet, catalog.DepartmentSimpleList,
			`{"errcode":0,"errmsg":"ok","department_id":[{"id":2,"parentid":1,"order":10},{"id":3,"parentid":2,"order":40}]}`,
			func(c *wecom.Client) (any, error) { return c.Departments.List(ctx, 2) }, "[{2 1 10} {3 2 40}]", ""},
		{"department/get (95351)", http.MethodGet, catalog.DepartmentGet,
			`{"errcode":0,"errmsg":"ok","department":{"id":2,"name":"广州研发中心","name_en":"RDGZ","department_leader":["zhangsan","lisi"],"parentid":1,"order":10}}`,
			func(c *wecom.Client) (any, error) { return c.Departments.Get(ctx, 2) }, "&{2 广州研发中心 RDGZ 1 10 [zhangsan lisi]}", ""},
		{"department/create (90205)", http.MethodPost, catalog.DepartmentCreate, `{"errcode":0,"errmsg":"created","id":2}`,
			func(c *wecom.Client) (any, error) {
				return c.Departments.Create(ctx, wecom.DepartmentRequest{ID: 2, Name: "广州研发中心", NameEn: wecom.Ptr("RDGZ"), ParentID: 1, Order: wecom.Ptr(1)})
			}, "2", `{"id":2,"name":"广州研发中心","name_en":"RDGZ","parentid":1,"order":1}`},
		{"user/getuserid (95402)", http.MethodPost, catalog.UserIDByMobile, `{"errcode":0,"errmsg":"ok","userid":"zhangsan"}`,
			func(c *wecom.Client) (any, error) { return c.Users.ByMobile(ctx, "13430388888") }, "zhangsan", `{"mobile":"13430388888"}`},
		{"user/get_userid_by_email (95895)", http.MethodPost, catalog.UserIDByEmail, `{"errcode":0,"errmsg":"ok","userid":"zhangsan"}`,
			func(c *wecom.Client) (any, error) { return c.Users.ByEmail(ctx, "zhangsan@gzdev.com", wecom.EmailCorp) }, "zhangsan",
			`{"email":"zhangsan@gzdev.com","email_type":1}`},
		{"user/convert_to_openid (90202)", http.MethodPost, catalog.UserToOpenID, `{"errcode":0,"errmsg":"ok","openid":"oDjGHs-1yCnGrRovBj2yHij5JAAA"}`,
			func(c *wecom.Client) (any, error) { return c.Users.ToOpenID(ctx, "zhangsan") }, "oDjGHs-1yCnGrRovBj2yHij5JAAA", `{"userid":"zhangsan"}`},
		{"user/convert_to_userid (90202)", http.MethodPost, catalog.OpenIDToUser, `{"errcode":0,"errmsg":"ok","userid":"zhangsan"}`,
			func(c *wecom.Client) (any, error) { return c.Users.FromOpenID(ctx, "oDjGHs-1yCnGrRovBj2yHij5JAAA") }, "zhangsan",
			`{"openid":"oDjGHs-1yCnGrRovBj2yHij5JAAA"}`},
		{"user/simplelist (90200)", http.MethodGet, catalog.UserSimpleList,
			`{"errcode":0,"errmsg":"ok","userlist":[{"userid":"zhangsan","name":"张三","department":[1,2],"open_userid":"xxxxxx"}]}`,
			func(c *wecom.Client) (any, error) { return c.Users.SimpleList(ctx, 1) }, "[{zhangsan 张三 [1 2] xxxxxx}]", ""},
		{"batch/invite (90975)", http.MethodPost, catalog.BatchInvite,
			`{"errcode":0,"errmsg":"ok","invaliduser":["UserID1"],"invalidparty":[2],"invalidtag":[3]}`,
			func(c *wecom.Client) (any, error) {
				return c.Users.Invite(ctx, wecom.InviteRequest{Users: []string{"UserID1", "UserID2"}, Parties: []int{2}, Tags: []int{3}})
			}, "{[UserID1] [2] [3]}", `{"user":["UserID1","UserID2"],"party":[2],"tag":[3]}`},
		{"user/batchdelete (90199)", http.MethodPost, catalog.UserBatchDelete, `{"errcode":0,"errmsg":"deleted"}`,
			func(c *wecom.Client) (any, error) { return nil, c.Users.BatchDelete(ctx, []string{"zhangsan", "lisi"}) }, "<nil>",
			`{"useridlist":["zhangsan","lisi"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var sent string
			mt := tokenTransport()
			mt.RegisterResponder(tc.method, testBase+tc.id.Path(), func(r *http.Request) (*http.Response, error) {
				if r.Body != nil {
					b, _ := io.ReadAll(r.Body)
					sent = string(b)
				}
				return httpmock.NewStringResponse(http.StatusOK, tc.answer), nil
			})
			got, err := tc.call(setup(t, wecom.WithTransport(mt)))
			if err != nil {
				t.Fatal(err)
			}
			if s := fmt.Sprintf("%v", got); s != tc.want {
				t.Errorf("got %s, want %s", s, tc.want)
			}
			if tc.body != "" && sent != tc.body {
				t.Errorf("sent %s, want %s", sent, tc.body)
			}
		})
	}
}
