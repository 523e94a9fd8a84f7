package wecom_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

var (
	pathGCList     = catalog.GroupChatList.Path()
	pathGCGet      = catalog.GroupChatGet.Path()
	pathGCTransfer = catalog.GroupChatTransfer.Path()
)

// addGroups seeds n group chats wr00000, wr00001... owned by owner(i), in
// state status, and returns their ids in order.
func addGroups(srv *mock.Server, n, status int, owner func(i int) string) []string {
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("wr%05d", i)
		srv.AddGroupChat(testCorp, mock.GroupChat{ChatID: ids[i], Name: "g" + ids[i], Owner: owner(i), Status: status})
	}
	return ids
}

// collect walks seq to its end, or its first error.
func collect(seq func(func(wecom.GroupChatRef, error) bool)) ([]string, error) {
	var ids []string
	for g, err := range seq {
		if err != nil {
			return ids, err
		}
		ids = append(ids, g.ChatID)
	}
	return ids, nil
}

// sent is the requests an httpmock responder received.
type sent struct {
	mu     sync.Mutex
	bodies []string
}

// responder answers the requests in turn with answers (the last one again
// when they run out), keeping their bodies.
func (s *sent) responder(answers ...string) httpmock.Responder {
	return func(r *http.Request) (*http.Response, error) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.bodies = append(s.bodies, string(b))
		return httpmock.NewStringResponse(http.StatusOK, answers[min(len(s.bodies), len(answers))-1]), nil
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// groupChatSample is the answer of groupchat/get in WeCom's documentation
// (document/path/96338), shortened.
const groupChatSample = `{"errcode":0,"errmsg":"ok","group_chat":{
	"chat_id":"wrOgQhDgAAMYQiS5ol9G7gK9JVAAAA","name":"销售客服群","owner":"ZhuShengBen","create_time":1572505490,
	"notice":"文档群公告示例",
	"member_list":[
		{"userid":"abel","type":1,"join_time":1572505491,"join_scene":1,"invitor":{"userid":"jack"},"group_nickname":"客服小张","name":"张三丰"},
		{"userid":"wmOgQhDgAAuXFJGwbve4g4iXknfOAAAA","type":2,"unionid":"ozynqsulJFCZ2z1aYeS8h-nuasdAAA","join_time":1572505491,"join_scene":1,"group_nickname":"顾客","name":"顾客"}
	],
	"admin_list":[{"userid":"sam"},{"userid":"pony"}],
	"member_version":"71217227bbd112ecfe3a49c482195cb4"}}`

// TestGroupChatRequests: what each method sends, and what it makes of
// WeCom's answer.
func TestGroupChatRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name    string
		path    string
		answers []string
		call    func(c *wecom.Client) (any, error)
		bodies  []string
		want    any
	}{
		{
			name: "GroupChats with a filter, two pages",
			path: pathGCList,
			answers: []string{
				`{"errcode":0,"errmsg":"ok","group_chat_list":[{"chat_id":"wrA","status":1}],"next_cursor":"CUR1"}`,
				`{"errcode":0,"errmsg":"ok","group_chat_list":[{"chat_id":"wrB","status":0}],"next_cursor":""}`,
			},
			call: func(c *wecom.Client) (any, error) {
				var out []wecom.GroupChatRef
				for g, err := range c.Customers.GroupChats(ctx, wecom.GroupChatListRequest{StatusFilter: 1, OwnerUserIDs: []string{"zhangsan", "lisi", "ZhangSan"}, Limit: 50}) {
					if err != nil {
						return out, err
					}
					out = append(out, g)
				}
				return out, nil
			},
			bodies: []string{
				`{"status_filter":1,"owner_filter":{"userid_list":["zhangsan","lisi"]},"limit":50}`,
				`{"status_filter":1,"owner_filter":{"userid_list":["zhangsan","lisi"]},"cursor":"CUR1","limit":50}`,
			},
			want: []wecom.GroupChatRef{{ChatID: "wrA", Status: 1}, {ChatID: "wrB", Status: 0}},
		},
		{
			name:    "GroupChats of everything",
			path:    pathGCList,
			answers: []string{`{"errcode":0,"errmsg":"ok","group_chat_list":[],"next_cursor":""}`},
			call: func(c *wecom.Client) (any, error) {
				return collect(c.Customers.GroupChats(ctx, wecom.GroupChatListRequest{}))
			},
			bodies: []string{`{"status_filter":0,"limit":1000}`},
			want:   []string(nil),
		},
		{
			name:    "GroupChat with names",
			path:    pathGCGet,
			answers: []string{groupChatSample},
			call: func(c *wecom.Client) (any, error) {
				return c.Customers.GroupChat(ctx, "wrOgQhDgAAMYQiS5ol9G7gK9JVAAAA", true)
			},
			bodies: []string{`{"chat_id":"wrOgQhDgAAMYQiS5ol9G7gK9JVAAAA","need_name":1}`},
			want: &wecom.GroupChat{
				ChatID: "wrOgQhDgAAMYQiS5ol9G7gK9JVAAAA", Name: "销售客服群", Owner: "ZhuShengBen", CreateTime: 1572505490, Notice: "文档群公告示例",
				Members: []wecom.GroupChatMember{
					{UserID: "abel", Type: wecom.GroupChatMemberUser, JoinTime: 1572505491, JoinScene: 1, Invitor: wecom.GroupChatInvitor{UserID: "jack"}, GroupNickname: "客服小张", Name: "张三丰"},
					{UserID: "wmOgQhDgAAuXFJGwbve4g4iXknfOAAAA", Type: wecom.GroupChatMemberExternal, UnionID: "ozynqsulJFCZ2z1aYeS8h-nuasdAAA", JoinTime: 1572505491, JoinScene: 1, GroupNickname: "顾客", Name: "顾客"},
				},
				Admins:        []wecom.GroupChatAdmin{{UserID: "sam"}, {UserID: "pony"}},
				MemberVersion: "71217227bbd112ecfe3a49c482195cb4",
			},
		},
		{
			name:    "GroupChat without names",
			path:    pathGCGet,
			answers: []string{`{"errcode":0,"errmsg":"ok","group_chat":{"chat_id":"wrA","name":"","owner":"u1","create_time":1,"member_list":[],"admin_list":[],"member_version":"v"}}`},
			call: func(c *wecom.Client) (any, error) {
				return c.Customers.GroupChat(ctx, "wrA", false)
			},
			bodies: []string{`{"chat_id":"wrA","need_name":0}`},
			want:   &wecom.GroupChat{ChatID: "wrA", Owner: "u1", CreateTime: 1, Members: []wecom.GroupChatMember{}, Admins: []wecom.GroupChatAdmin{}, MemberVersion: "v"},
		},
		{
			name:    "TransferGroupChats",
			path:    pathGCTransfer,
			answers: []string{`{"errcode":0,"errmsg":"ok","failed_chat_list":[{"chat_id":"wrB","errcode":90500,"errmsg":"the owner of this chat is not resigned"}]}`},
			call: func(c *wecom.Client) (any, error) {
				return c.Customers.TransferGroupChats(ctx, []string{"wrA", "wrB"}, "lisi")
			},
			bodies: []string{`{"chat_id_list":["wrA","wrB"],"new_owner":"lisi"}`},
			want:   []wecom.GroupChatTransferFailure{{ChatID: "wrB", Code: wecom.CodeChatOwnerNotResigned, Message: "the owner of this chat is not resigned"}},
		},
		{
			name:    "TransferGroupChats, every group moved",
			path:    pathGCTransfer,
			answers: []string{`{"errcode":0,"errmsg":"ok","failed_chat_list":[]}`},
			call: func(c *wecom.Client) (any, error) {
				return c.Customers.TransferGroupChats(ctx, []string{"wrA"}, "lisi")
			},
			bodies: []string{`{"chat_id_list":["wrA"],"new_owner":"lisi"}`},
			want:   []wecom.GroupChatTransferFailure(nil),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mt := tokenTransport()
			var s sent
			mt.RegisterResponder(http.MethodPost, testBase+tc.path, s.responder(tc.answers...))
			got, err := tc.call(setup(t, wecom.WithTransport(mt), fastRetries()))
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if len(s.bodies) != len(tc.bodies) {
				t.Fatalf("%d requests %q, want %d", len(s.bodies), s.bodies, len(tc.bodies))
			}
			for i, b := range s.bodies {
				if !sameJSON(t, b, tc.bodies[i]) {
					t.Errorf("request %d: body %s, want %s", i+1, b, tc.bodies[i])
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// TestGroupChatValidation: input WeCom would refuse is an ErrInvalidRequest,
// and no request leaves.
func TestGroupChatValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	list := func(req wecom.GroupChatListRequest) func(c *wecom.Client) error {
		return func(c *wecom.Client) error {
			_, err := collect(c.Customers.GroupChats(ctx, req))
			return err
		}
	}
	transfer := func(ids []string, owner string) func(c *wecom.Client) error {
		return func(c *wecom.Client) error {
			_, err := c.Customers.TransferGroupChats(ctx, ids, owner)
			return err
		}
	}
	tests := []struct {
		name string
		call func(c *wecom.Client) error
	}{
		{"status filter -1", list(wecom.GroupChatListRequest{StatusFilter: -1})},
		{"status filter 4", list(wecom.GroupChatListRequest{StatusFilter: 4})},
		{"limit -1", list(wecom.GroupChatListRequest{Limit: -1})},
		{"limit 1001", list(wecom.GroupChatListRequest{Limit: 1001})},
		{"an empty owner", list(wecom.GroupChatListRequest{OwnerUserIDs: []string{"u1", ""}})},
		{"GroupChat without id", func(c *wecom.Client) error {
			_, err := c.Customers.GroupChat(ctx, "", false)
			return err
		}},
		{"transfer nothing", transfer(nil, "lisi")},
		{"transfer an empty id", transfer([]string{"wrA", ""}, "lisi")},
		{"transfer to nobody", transfer([]string{"wrA"}, "")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mt := httpmock.NewMockTransport()
			err := tc.call(setup(t, wecom.WithTransport(mt), fastRetries()))
			var ve *wecom.ValidationError
			if !errors.Is(err, wecom.ErrInvalidRequest) || !errors.As(err, &ve) {
				t.Errorf("err = %v, want a *ValidationError", err)
			}
			if n := mt.GetTotalCallCount(); n != 0 {
				t.Errorf("%d requests sent, want none", n)
			}
		})
	}
}

// TestGroupChatsWalk: every group once, in chat_id order, in as few calls
// as pages of 1,000 allow, around the page size.
func TestGroupChatsWalk(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 999, 1000, 1001, 2500} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			srv := newMock(t, mock.Config{})
			c := setup(t, on(srv), fastRetries())
			want := addGroups(srv, n, wecom.GroupChatOwnerActive, func(i int) string { return fmt.Sprintf("u%d", i%10) })
			got, err := collect(c.Customers.GroupChats(context.Background(), wecom.GroupChatListRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%d groups walked, want %d, each once in order", len(got), len(want))
			}
			if calls, want := srv.Stats().Calls[pathGCList], max(1, (n+999)/1000); calls != want {
				t.Errorf("%d calls, want %d", calls, want)
			}
		})
	}
}

// TestGroupChatsFilters: 250 owners are walked in 3 calls of at most 100
// (the mock refuses more), a repeated owner in another case changes
// nothing, and every group of those owners in the state asked for comes
// once.
func TestGroupChatsFilters(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv), fastRetries())
	// wr00000..wr00599: owner o(i%300), state i%2 (300 owners, 50 not asked for).
	var want []string
	owners := make([]string, 0, 251)
	for i := range 250 {
		owners = append(owners, fmt.Sprintf("o%03d", i))
	}
	owners = append(owners, "O007") // the same userid
	for i := range 600 {
		id, owner, status := fmt.Sprintf("wr%05d", i), fmt.Sprintf("o%03d", i%300), i%2
		srv.AddGroupChat(testCorp, mock.GroupChat{ChatID: id, Owner: owner, Status: status})
		if i%300 < 250 && status == wecom.GroupChatOwnerResigned {
			want = append(want, id)
		}
	}
	got, err := collect(c.Customers.GroupChats(context.Background(), wecom.GroupChatListRequest{OwnerUserIDs: owners, StatusFilter: wecom.GroupChatOwnerResigned}))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) || len(got) != 250 {
		t.Errorf("%d groups, want the %d of the owners asked for, each once", len(got), len(want))
	}
	if calls := srv.Stats().Calls[pathGCList]; calls != 3 {
		t.Errorf("%d calls, want 3", calls)
	}
}

// TestGroupChatsStops: breaking out of the loop fetches no further page; a
// cancelled ctx ends the walk with its error, and so does an error answered
// for a later page, each yielded once with the zero group.
func TestGroupChatsStops(t *testing.T) {
	t.Parallel()
	t.Run("break", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ after, calls int }{{1, 1}, {1000, 1}, {1001, 2}} {
			srv := newMock(t, mock.Config{})
			c := setup(t, on(srv), fastRetries())
			addGroups(srv, 2500, 0, func(int) string { return "u1" })
			n := 0
			for _, err := range c.Customers.GroupChats(context.Background(), wecom.GroupChatListRequest{}) {
				if err != nil {
					t.Fatal(err)
				}
				if n++; n == tc.after {
					break
				}
			}
			if calls := srv.Stats().Calls[pathGCList]; calls != tc.calls {
				t.Errorf("break after %d groups: %d calls, want %d", tc.after, calls, tc.calls)
			}
		}
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		srv := newMock(t, mock.Config{})
		c := setup(t, on(srv), fastRetries())
		addGroups(srv, 30, 0, func(int) string { return "u1" })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got, errs := 0, []error(nil)
		for g, err := range c.Customers.GroupChats(ctx, wecom.GroupChatListRequest{Limit: 10}) {
			if err != nil {
				errs = append(errs, err)
				if g != (wecom.GroupChatRef{}) {
					t.Errorf("error yielded with %+v", g)
				}
				continue
			}
			if got++; got == 5 {
				cancel()
			}
		}
		if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
			t.Errorf("errors %v, want context.Canceled once", errs)
		}
		if got != 10 {
			t.Errorf("%d groups, want the 10 of the first page", got)
		}
		if calls := srv.Stats().Calls[pathGCList]; calls != 1 {
			t.Errorf("%d calls, want 1", calls)
		}
	})
	t.Run("error on a later page", func(t *testing.T) {
		t.Parallel()
		srv := newMock(t, mock.Config{})
		c := setup(t, on(srv), fastRetries())
		addGroups(srv, 30, 0, func(int) string { return "u1" })
		if err := srv.AddScript(mock.Script{Path: pathGCList, ErrCode: wecom.CodeNoPrivilege, ErrMsg: "no privilege",
			Match: func(_ *http.Request, body []byte) bool { return bytes.Contains(body, []byte(`"cursor"`)) }}); err != nil {
			t.Fatal(err)
		}
		got, errs := 0, []error(nil)
		for _, err := range c.Customers.GroupChats(context.Background(), wecom.GroupChatListRequest{Limit: 10}) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			got++
		}
		var ae *wecom.APIError
		if len(errs) != 1 || !errors.As(errs[0], &ae) || ae.Code != wecom.CodeNoPrivilege {
			t.Errorf("errors %v, want one APIError 60011", errs)
		}
		if got != 10 {
			t.Errorf("%d groups, want the 10 of the first page", got)
		}
		if calls := srv.Stats().Calls[pathGCList]; calls != 2 {
			t.Errorf("%d calls, want 2", calls)
		}
	})
}

// TestGroupChatsOwnerFilterRequired: without owners, a corp with over 1,000
// members gets 81017, and the error says what to do while keeping the code;
// with owners, the walk works.
func TestGroupChatsOwnerFilterRequired(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv), fastRetries())
	users := make([]string, 1001)
	for i := range users {
		users[i] = fmt.Sprintf("user%04d", i)
	}
	srv.AddUsers(testCorp, users...)
	addGroups(srv, 3, 0, func(i int) string { return users[i] })
	ctx := context.Background()
	_, err := collect(c.Customers.GroupChats(ctx, wecom.GroupChatListRequest{}))
	var ae *wecom.APIError
	if !errors.As(err, &ae) || ae.Code != wecom.CodeGroupChatOwnerFilterRequired || ae.Path != pathGCList {
		t.Fatalf("err = %v, want an APIError 81017", err)
	}
	if !strings.Contains(err.Error(), "give OwnerUserIDs") || !strings.Contains(err.Error(), "errcode 81017") {
		t.Errorf("err = %q, want the help and the code", err)
	}
	got, err := collect(c.Customers.GroupChats(ctx, wecom.GroupChatListRequest{OwnerUserIDs: users}))
	if err != nil || len(got) != 3 {
		t.Errorf("with owners: %v, %v; want 3 groups", got, err)
	}
}

// TestTransferGroupChats: 250 groups in 3 calls; the groups WeCom refuses
// come back with their reasons from every call, the others move, and
// GroupChat shows their new owner. An error of a whole call ends the
// transfer with the failures so far and names the call.
func TestTransferGroupChats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("failures collected", func(t *testing.T) {
		t.Parallel()
		srv := newMock(t, mock.Config{})
		c := setup(t, on(srv), fastRetries())
		srv.AddUsers(testCorp, "lisi")
		ids := addGroups(srv, 250, wecom.GroupChatOwnerResigned, func(int) string { return "gone" })
		var want []wecom.GroupChatTransferFailure
		for _, i := range []int{5, 120, 240} { // one in each call
			srv.AddGroupChat(testCorp, mock.GroupChat{ChatID: ids[i], Owner: "wangwu", Status: wecom.GroupChatOwnerActive})
			want = append(want, wecom.GroupChatTransferFailure{ChatID: ids[i], Code: wecom.CodeChatOwnerNotResigned})
		}
		ids[7], ids[230] = "wrUnknown1", "wrUnknown2"
		want = slices.Insert(want, 1, wecom.GroupChatTransferFailure{ChatID: "wrUnknown1", Code: 40050})
		want = slices.Insert(want, 3, wecom.GroupChatTransferFailure{ChatID: "wrUnknown2", Code: 40050})
		failed, err := c.Customers.TransferGroupChats(ctx, ids, "lisi")
		if err != nil {
			t.Fatal(err)
		}
		for i := range failed {
			failed[i].Message = ""
		}
		if !reflect.DeepEqual(failed, want) {
			t.Errorf("failures %+v\nwant %+v", failed, want)
		}
		if calls := srv.Stats().Calls[pathGCTransfer]; calls != 3 {
			t.Errorf("%d calls, want 3", calls)
		}
		g, err := c.Customers.GroupChat(ctx, ids[0], false)
		if err != nil || g.Owner != "lisi" {
			t.Errorf("GroupChat after the transfer: %+v, %v; want owner lisi", g, err)
		}
		if g, _ := c.Customers.GroupChat(ctx, ids[5], false); g.Owner != "wangwu" {
			t.Errorf("a refused group's owner is %q, want wangwu", g.Owner)
		}
		moved, err := collect(c.Customers.GroupChats(ctx, wecom.GroupChatListRequest{OwnerUserIDs: []string{"lisi"}, StatusFilter: wecom.GroupChatInherited}))
		if err != nil || len(moved) != 245 {
			t.Errorf("%d groups inherited by lisi (%v), want 245", len(moved), err)
		}
		again, err := c.Customers.TransferGroupChats(ctx, ids[:1], "lisi")
		if err != nil || len(again) != 1 || again[0].Code != wecom.CodeChatOwnerNotResigned {
			t.Errorf("the same group again: %+v, %v; want it refused with 90500", again, err)
		}
	})
	// A chat id given twice is sent once: sent again, the mock (as WeCom)
	// reports the group it just moved as failed (90500). Without repeats,
	// the 102 ids are 100 groups, one call.
	t.Run("repeated chat ids", func(t *testing.T) {
		t.Parallel()
		srv := newMock(t, mock.Config{})
		c := setup(t, on(srv), fastRetries())
		srv.AddUsers(testCorp, "lisi")
		groups := addGroups(srv, 100, wecom.GroupChatOwnerResigned, func(int) string { return "gone" })
		ids := slices.Insert(slices.Clone(groups), 50, groups[10]) // in the same call
		ids = append(ids, groups[0])                               // past the first 100
		failed, err := c.Customers.TransferGroupChats(ctx, ids, "lisi")
		if err != nil || len(failed) != 0 {
			t.Errorf("failures %+v, err %v; want none", failed, err)
		}
		if calls := srv.Stats().Calls[pathGCTransfer]; calls != 1 {
			t.Errorf("%d calls, want 1: 100 distinct groups", calls)
		}
		for _, id := range groups {
			if g, ok := srv.GroupChat(testCorp, id); !ok || g.Owner != "lisi" || g.Status != wecom.GroupChatInherited {
				t.Errorf("group %s owned by %q in state %d, want lisi, %d", id, g.Owner, g.Status, wecom.GroupChatInherited)
			}
		}
	})
	t.Run("a call fails", func(t *testing.T) {
		t.Parallel()
		srv := newMock(t, mock.Config{})
		c := setup(t, on(srv), fastRetries())
		srv.AddUsers(testCorp, "lisi")
		ids := addGroups(srv, 250, wecom.GroupChatOwnerResigned, func(int) string { return "gone" })
		srv.AddGroupChat(testCorp, mock.GroupChat{ChatID: ids[3], Owner: "wangwu"})
		if err := srv.AddScript(mock.Script{Path: pathGCTransfer, ErrCode: wecom.CodeNoPrivilege, ErrMsg: "no privilege",
			Match: func(_ *http.Request, body []byte) bool { return bytes.Contains(body, []byte(ids[150])) }}); err != nil {
			t.Fatal(err)
		}
		failed, err := c.Customers.TransferGroupChats(ctx, ids, "lisi")
		var ae *wecom.APIError
		if !errors.As(err, &ae) || ae.Code != wecom.CodeNoPrivilege || !strings.Contains(err.Error(), "call 2 of 3") {
			t.Errorf("err = %v, want the APIError 60011 of call 2 of 3", err)
		}
		if len(failed) != 1 || failed[0].ChatID != ids[3] {
			t.Errorf("failures %+v, want the one of the first call", failed)
		}
		if calls := srv.Stats().Calls[pathGCTransfer]; calls != 2 {
			t.Errorf("%d calls, want 2", calls)
		}
		for _, tc := range []struct {
			i     int
			owner string
		}{{0, "lisi"}, {150, "gone"}, {249, "gone"}} {
			if g, _ := srv.GroupChat(testCorp, ids[tc.i]); g.Owner != tc.owner {
				t.Errorf("group %d owned by %q, want %q", tc.i, g.Owner, tc.owner)
			}
		}
	})
}
