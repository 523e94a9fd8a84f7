package mock_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

const (
	pathGCList     = string(catalog.GroupChatList)
	pathGCGet      = string(catalog.GroupChatGet)
	pathGCTransfer = string(catalog.GroupChatTransfer)
)

// groupChatServer returns a Server whose corp corpID has n group chats
// wr000..., owned by u1 and u2 in turn, the odd ones in state 1.
func groupChatServer(t *testing.T, n int) (*mock.Server, http.Handler, string) {
	t.Helper()
	srv := newServer(t, mock.Config{})
	for i := range n {
		srv.AddGroupChat(corpID, mock.GroupChat{ChatID: fmt.Sprintf("wr%03d", i), Owner: fmt.Sprintf("u%d", 1+i%2), Status: i % 2})
	}
	h := srv.Handler()
	return srv, h, directToken(t, h, corpID, secret)
}

// postAnswer posts body to path and decodes the answer.
func postAnswer(t *testing.T, h http.Handler, tok, path, body string) answer {
	t.Helper()
	rec := direct(t.Context(), h, http.MethodPost, path+"?access_token="+tok, body)
	a := answer{}
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatalf("%s: answer %q: %v", path, rec.Body.String(), err)
	}
	return a
}

func chatIDs(a answer) []string {
	var ids []string
	for _, g := range a.list("group_chat_list") {
		ids = append(ids, answer(g.(map[string]any)).str("chat_id"))
	}
	return ids
}

// TestGroupChatListLimits: limit 1 to 1,000, at most 100 owners, a known
// status filter; anything else is 40058, as at WeCom.
func TestGroupChatListLimits(t *testing.T) {
	t.Parallel()
	_, h, tok := groupChatServer(t, 3)
	owners := func(n int) string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = strconv.Quote(fmt.Sprintf("o%d", i))
		}
		return `{"limit":10,"owner_filter":{"userid_list":[` + strings.Join(ids, ",") + `]}}`
	}
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"no limit", `{}`, 40058},
		{"limit 0", `{"limit":0}`, 40058},
		{"limit 1001", `{"limit":1001}`, 40058},
		{"limit 1", `{"limit":1}`, 0},
		{"limit 1000", `{"limit":1000}`, 0},
		{"limit as a string", `{"limit":"10"}`, 47001},
		{"status 4", `{"limit":10,"status_filter":4}`, 40058},
		{"status -1", `{"limit":10,"status_filter":-1}`, 40058},
		{"100 owners", owners(100), 0},
		{"101 owners", owners(101), 40058},
		{"an empty owner", `{"limit":10,"owner_filter":{"userid_list":["u1",""]}}`, 40058},
		{"made-up cursor", `{"limit":10,"cursor":"abc"}`, 40058},
		{"a number for cursor", `{"limit":10,"cursor":"2"}`, 40058},
	} {
		if got := postAnswer(t, h, tok, pathGCList, tc.body).code(); got != tc.want {
			t.Errorf("%s: errcode %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestGroupChatListPages: pages in chat_id order, filtered by state and
// owner (case-insensitive); the cursor is opaque, not a number, and is
// refused with another filter, another status or another corp.
func TestGroupChatListPages(t *testing.T) {
	t.Parallel()
	srv, h, tok := groupChatServer(t, 7)
	first := postAnswer(t, h, tok, pathGCList, `{"limit":3}`)
	wantCode(t, "page 1", first, 0)
	cur := first.str("next_cursor")
	if got := chatIDs(first); !slices.Equal(got, []string{"wr000", "wr001", "wr002"}) || cur == "" {
		t.Fatalf("page 1: %v, cursor %q", got, cur)
	}
	if _, err := strconv.Atoi(cur); err == nil {
		t.Errorf("cursor %q is a plain number", cur)
	}
	second := postAnswer(t, h, tok, pathGCList, `{"limit":3,"cursor":"`+cur+`"}`)
	third := postAnswer(t, h, tok, pathGCList, `{"limit":3,"cursor":"`+second.str("next_cursor")+`"}`)
	if got := append(chatIDs(second), chatIDs(third)...); !slices.Equal(got, []string{"wr003", "wr004", "wr005", "wr006"}) || third.str("next_cursor") != "" {
		t.Errorf("pages 2 and 3: %v, last cursor %q", got, third.str("next_cursor"))
	}
	for _, body := range []string{
		`{"limit":3,"status_filter":1,"cursor":"` + cur + `"}`,
		`{"limit":3,"owner_filter":{"userid_list":["u1"]},"cursor":"` + cur + `"}`,
	} {
		if a := postAnswer(t, h, tok, pathGCList, body); a.code() != 40058 || !strings.Contains(a.msg(), "invalid cursor") {
			t.Errorf("%s: %v, want 40058 invalid cursor", body, a)
		}
	}
	srv.AddApp("wwother", "s2")
	other := directToken(t, h, "wwother", "s2")
	if a := postAnswer(t, h, other, pathGCList, `{"limit":3,"cursor":"`+cur+`"}`); a.code() != 40058 {
		t.Errorf("another corp's cursor: %v, want 40058", a)
	}
	a := postAnswer(t, h, tok, pathGCList, `{"limit":10,"status_filter":1,"owner_filter":{"userid_list":["U2"]}}`)
	if got := chatIDs(a); !slices.Equal(got, []string{"wr001", "wr003", "wr005"}) {
		t.Errorf("state 1 of U2: %v", got)
	}
	if g := a.list("group_chat_list")[0].(map[string]any); g["status"] != float64(1) {
		t.Errorf("status %v, want 1", g["status"])
	}
	empty := postAnswer(t, h, tok, pathGCList, `{"limit":10,"owner_filter":{"userid_list":["nobody"]}}`)
	if l, ok := empty["group_chat_list"].([]any); !ok || len(l) != 0 || empty.str("next_cursor") != "" {
		t.Errorf("no group: %v, want an empty list", empty)
	}
}

// TestGroupChatListOwnerFilterRequired: without an owner filter, a corp
// that knows over 1,000 distinct members (contacts, members with
// customers, group owners and member-type group members, userids
// case-insensitive; external members do not count) gets 81017.
func TestGroupChatListOwnerFilterRequired(t *testing.T) {
	t.Parallel()
	srv, h, tok := groupChatServer(t, 0) // u1..u3 are contacts
	list := func() int { return postAnswer(t, h, tok, pathGCList, `{"limit":10}`).code() }
	srv.AddUsers(corpID, "U1") // u1 again
	for i := range 300 {
		srv.AddCustomers(corpID, fmt.Sprintf("c%d", i), "wmX")
	}
	var members []mock.GroupChatMember
	for i := range 300 {
		members = append(members, mock.GroupChatMember{UserID: fmt.Sprintf("m%d", i), Type: 1},
			mock.GroupChatMember{UserID: fmt.Sprintf("wm%d", i), Type: 2})
	}
	srv.AddGroupChat(corpID, mock.GroupChat{ChatID: "wrM", Owner: "c0", Members: members})
	for i := range 397 {
		srv.AddGroupChat(corpID, mock.GroupChat{ChatID: fmt.Sprintf("wrO%d", i), Owner: fmt.Sprintf("o%d", i)})
	}
	if got := list(); got != 0 { // 3 + 300 + 300 + 397 = 1,000
		t.Fatalf("1,000 members: errcode %d, want 0", got)
	}
	srv.AddGroupChat(corpID, mock.GroupChat{ChatID: "wrLast", Owner: "o-last"})
	if got := list(); got != 81017 {
		t.Errorf("1,001 members: errcode %d, want 81017", got)
	}
	if a := postAnswer(t, h, tok, pathGCList, `{"limit":10,"owner_filter":{"userid_list":["o-last"]}}`); a.code() != 0 || len(chatIDs(a)) != 1 {
		t.Errorf("with an owner filter: %v", a)
	}
}

// TestGroupChatGet: the group as seeded, names only with need_name 1,
// 40050 for an unknown chat.
func TestGroupChatGet(t *testing.T) {
	t.Parallel()
	srv, h, tok := groupChatServer(t, 0)
	srv.AddGroupChat(corpID, mock.GroupChat{ChatID: "wrA", Name: "sales", Owner: "u1", CreateTime: 1572505490, Notice: "hi",
		Members: []mock.GroupChatMember{
			{UserID: "u2", Type: 1, JoinTime: 10, JoinScene: 1, Invitor: "u1", GroupNickname: "nick", Name: "Li"},
			{UserID: "wmA", Type: 2, UnionID: "ozA", JoinTime: 11, JoinScene: 3, Name: "Wang"},
		},
		Admins: []string{"u2"}, MemberVersion: "v1"})
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"unknown chat", `{"chat_id":"wrZ"}`, 40050},
		{"no chat id", `{}`, 40058},
		{"need_name 2", `{"chat_id":"wrA","need_name":2}`, 40058},
		{"need_name as a bool", `{"chat_id":"wrA","need_name":true}`, 47001},
	} {
		if got := postAnswer(t, h, tok, pathGCGet, tc.body).code(); got != tc.want {
			t.Errorf("%s: errcode %d, want %d", tc.name, got, tc.want)
		}
	}
	a := postAnswer(t, h, tok, pathGCGet, `{"chat_id":"wrA","need_name":1}`)
	wantCode(t, "get", a, 0)
	g := a.obj("group_chat")
	if g.str("chat_id") != "wrA" || g.str("name") != "sales" || g.str("owner") != "u1" || g.num("create_time") != 1572505490 ||
		g.str("notice") != "hi" || g.str("member_version") != "v1" {
		t.Errorf("group_chat %v", g)
	}
	m := g.list("member_list")
	if len(m) != 2 {
		t.Fatalf("member_list %v", m)
	}
	first, second := answer(m[0].(map[string]any)), answer(m[1].(map[string]any))
	if first.str("userid") != "u2" || first.num("type") != 1 || first.obj("invitor").str("userid") != "u1" || first.str("group_nickname") != "nick" ||
		first.str("name") != "Li" || first.num("join_time") != 10 || first.num("join_scene") != 1 {
		t.Errorf("member 1: %v", first)
	}
	if second.str("unionid") != "ozA" || second.num("type") != 2 || second["invitor"] != nil || second.str("name") != "Wang" {
		t.Errorf("member 2: %v", second)
	}
	if ad := g.list("admin_list"); len(ad) != 1 || answer(ad[0].(map[string]any)).str("userid") != "u2" {
		t.Errorf("admin_list %v", ad)
	}
	noNames := postAnswer(t, h, tok, pathGCGet, `{"chat_id":"wrA"}`).obj("group_chat").list("member_list")
	for _, m := range noNames {
		if _, ok := m.(map[string]any)["name"]; ok {
			t.Errorf("a name without need_name: %v", m)
		}
	}
}

// TestGroupChatTransfer: 1 to 100 chats to a known member; a group whose
// owner has not left, or that the new owner owns, and an unknown chat are
// listed with their own errcode, the others move and groupchat/get shows
// it.
func TestGroupChatTransfer(t *testing.T) {
	t.Parallel()
	srv, h, tok := groupChatServer(t, 4) // wr000 (u1, 0), wr001 (u2, 1), wr002 (u1, 0), wr003 (u2, 1)
	srv.AddGroupChat(corpID, mock.GroupChat{ChatID: "wrMine", Owner: "u3", Status: 1})
	many := make([]string, 101)
	for i := range many {
		many[i] = strconv.Quote(fmt.Sprintf("wr%03d", i))
	}
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"no chats", `{"chat_id_list":[],"new_owner":"u3"}`, 40058},
		{"101 chats", `{"chat_id_list":[` + strings.Join(many, ",") + `],"new_owner":"u3"}`, 40058},
		{"no new owner", `{"chat_id_list":["wr001"]}`, 40058},
		{"unknown new owner", `{"chat_id_list":["wr001"],"new_owner":"nobody"}`, 46004},
	} {
		if got := postAnswer(t, h, tok, pathGCTransfer, tc.body).code(); got != tc.want {
			t.Errorf("%s: errcode %d, want %d", tc.name, got, tc.want)
		}
	}
	a := postAnswer(t, h, tok, pathGCTransfer, `{"chat_id_list":["wr000","wr001","wrZ","wrMine","wr003"],"new_owner":"U3"}`)
	wantCode(t, "transfer", a, 0)
	var failed []string
	for _, f := range a.list("failed_chat_list") {
		f := answer(f.(map[string]any))
		failed = append(failed, fmt.Sprintf("%s %d", f.str("chat_id"), f.code()))
	}
	if want := []string{"wr000 90500", "wrZ 40050", "wrMine 90500"}; !slices.Equal(failed, want) {
		t.Errorf("failed_chat_list %v, want %v", failed, want)
	}
	for id, want := range map[string]string{"wr000": "u1", "wr001": "U3", "wr003": "U3", "wrMine": "u3"} {
		if g, _ := srv.GroupChat(corpID, id); g.Owner != want {
			t.Errorf("%s owned by %q, want %q", id, g.Owner, want)
		}
		if got := postAnswer(t, h, tok, pathGCGet, `{"chat_id":"`+id+`"}`).obj("group_chat").str("owner"); got != want {
			t.Errorf("groupchat/get %s: owner %q, want %q", id, got, want)
		}
	}
	if g, _ := srv.GroupChat(corpID, "wr001"); g.Status != 3 {
		t.Errorf("wr001 in state %d after the transfer, want 3", g.Status)
	}
	again := postAnswer(t, h, tok, pathGCTransfer, `{"chat_id_list":["wr001"],"new_owner":"u3"}`)
	if l := again.list("failed_chat_list"); len(l) != 1 || answer(l[0].(map[string]any)).code() != 90500 {
		t.Errorf("the same group again: %v, want it refused with 90500", again)
	}
}

// TestAddGroupChatCopies: the Server keeps its own copy of what it is
// given, and hands out copies.
func TestAddGroupChatCopies(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{})
	g := mock.GroupChat{ChatID: "wrA", Owner: "u1", Admins: []string{"u1"}, Members: []mock.GroupChatMember{{UserID: "u1", Type: 1}}}
	srv.AddGroupChat(corpID, g)
	g.Admins[0], g.Members[0].UserID = "x", "x"
	got, ok := srv.GroupChat(corpID, "wrA")
	if !ok || got.Admins[0] != "u1" || got.Members[0].UserID != "u1" {
		t.Fatalf("GroupChat = %+v, %t", got, ok)
	}
	got.Admins[0] = "y"
	if again, _ := srv.GroupChat(corpID, "wrA"); again.Admins[0] != "u1" {
		t.Error("a returned copy changed the Server's group")
	}
	if _, ok := srv.GroupChat(corpID, "wrZ"); ok {
		t.Error("an unknown group found")
	}
	if _, ok := srv.GroupChat("wwnone", "wrA"); ok {
		t.Error("a group of an unknown corp found")
	}
}
