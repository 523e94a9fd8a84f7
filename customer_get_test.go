package wecom_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// pairKey names a (member, customer) pair.
func pairKey(mc wecom.MemberCustomer) string {
	return mc.Follow.UserID + "|" + mc.Contact.ExternalUserID
}

// seededPairs returns every pair the mock holds for members.
func seededPairs(srv *mock.Server, members []string) map[string]bool {
	want := make(map[string]bool)
	for _, u := range members {
		for _, e := range srv.Customers(testCorp, u) {
			want[u+"|"+e] = true
		}
	}
	return want
}

// TestByMembersVisitsEveryPairOnce: whatever the number of members (split
// in calls of 100) and of pairs (pages of 100), every seeded pair comes
// exactly once.
func TestByMembersVisitsEveryPairOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ members, pairs int }{
		{0, 0}, {1, 1}, {1, 250}, {99, 300}, {100, 1000}, {101, 404}, {250, 2500},
	} {
		t.Run(fmt.Sprintf("%d members %d pairs", tc.members, tc.pairs), func(t *testing.T) {
			t.Parallel()
			srv := newMock(t, mock.Config{})
			c := setup(t, on(srv))
			var members []string
			if tc.members > 0 {
				s := srv.SeedCustomers(testCorp, mock.CustomerSeed{Members: tc.members, Pairs: tc.pairs, Shared: 0.2})
				members = s.Members
				if len(members) != tc.members || s.Pairs != tc.pairs {
					t.Fatalf("seeded %d members, %d pairs", len(members), s.Pairs)
				}
			}
			want := seededPairs(srv, members)
			got := make(map[string]int)
			for mc, err := range c.Customers.ByMembers(context.Background(), members) {
				if err != nil {
					t.Fatal(err)
				}
				got[pairKey(mc)]++
				if mc.Contact.Name == "" || mc.Follow.CreateTime == 0 || mc.Follow.UserID == "" {
					t.Errorf("pair %s: %+v", pairKey(mc), mc)
				}
			}
			for k, n := range got {
				if n != 1 || !want[k] {
					t.Errorf("pair %s came %d times (seeded: %t)", k, n, want[k])
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d pairs visited, %d seeded", len(got), len(want))
			}
			calls := srv.Stats().Calls[catalog.CustomerBatch.Path()]
			if min := (tc.members + 99) / 100; calls < min {
				t.Errorf("%d calls for %d members", calls, tc.members)
			}
		})
	}
}

// TestByMembersNamesTwice: a member named twice, in one call of 100 or in
// two, with another case or not, is walked once.
func TestByMembersNamesTwice(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv))
	s := srv.SeedCustomers(testCorp, mock.CustomerSeed{Members: 120, Pairs: 360})
	members := append(slices.Clone(s.Members), s.Members[0], strings.ToUpper(s.Members[5]), s.Members[119])
	got := make(map[string]int)
	for mc, err := range c.Customers.ByMembers(context.Background(), members) {
		if err != nil {
			t.Fatal(err)
		}
		got[pairKey(mc)]++
	}
	for k, n := range got {
		if n != 1 {
			t.Errorf("pair %s came %d times", k, n)
		}
	}
	if len(got) != 360 {
		t.Errorf("%d pairs, want 360", len(got))
	}
}

// TestByMembersStops: break fetches no further page; a cancelled context
// ends the walk with its error; an error mid-walk ends it with that error,
// yielded once.
func TestByMembersStops(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*wecom.Client, *mock.Server, []string) {
		t.Helper()
		srv := newMock(t, mock.Config{})
		c := setup(t, on(srv))
		s := srv.SeedCustomers(testCorp, mock.CustomerSeed{Members: 3, Pairs: 1000})
		return c, srv, s.Members
	}
	batch := catalog.CustomerBatch.Path()
	t.Run("break", func(t *testing.T) {
		t.Parallel()
		c, srv, members := setup(t)
		n := 0
		for _, err := range c.Customers.ByMembers(context.Background(), members) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 150 {
				break
			}
		}
		if calls := srv.Stats().Calls[batch]; calls != 2 {
			t.Errorf("%d calls for 150 pairs in pages of 100, want 2", calls)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		c, srv, members := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n, errs := 0, 0
		var last error
		for _, err := range c.Customers.ByMembers(ctx, members) {
			if err != nil {
				errs++
				last = err
				continue
			}
			if n++; n == 250 {
				cancel()
			}
		}
		if errs != 1 || !errors.Is(last, context.Canceled) || n != 300 {
			t.Errorf("after cancelling at 250: %d pairs, %d errors, last %v; want the page's 300, one context.Canceled", n, errs, last)
		}
		if calls := srv.Stats().Calls[batch]; calls != 3 {
			t.Errorf("%d calls, want 3", calls)
		}
	})
	t.Run("error mid-walk", func(t *testing.T) {
		t.Parallel()
		c, srv, members := setup(t)
		calls := 0
		srv.AddScript(mock.Script{Path: batch, Match: func(*http.Request, []byte) bool { calls++; return calls == 3 },
			ErrCode: 40058, ErrMsg: "invalid cursor"})
		n, errs := 0, 0
		var last error
		for _, err := range c.Customers.ByMembers(context.Background(), members) {
			if err != nil {
				errs++
				last = err
				continue
			}
			n++
		}
		var ae *wecom.APIError
		if n != 200 || errs != 1 || !errors.As(last, &ae) || ae.Code != 40058 {
			t.Errorf("%d pairs, %d errors, last %v; want 200 pairs then one 40058", n, errs, last)
		}
	})
	t.Run("empty member", func(t *testing.T) {
		t.Parallel()
		c, srv, _ := setup(t)
		for _, err := range c.Customers.ByMembers(context.Background(), []string{"member001", ""}) {
			if !errors.Is(err, wecom.ErrInvalidRequest) {
				t.Errorf("got %v, want ErrInvalidRequest", err)
			}
		}
		if calls := srv.Stats().Calls[batch]; calls != 0 {
			t.Errorf("%d calls", calls)
		}
	})
}

// TestGetReadsEveryFollower: a customer of 1,200 members comes whole, in
// three pages of followers; the tags a member marks come back from get and
// from batch/get_by_user.
func TestGetReadsEveryFollower(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv))
	s := srv.SeedCustomers(testCorp, mock.CustomerSeed{Members: 2, Pairs: 4, WideFollowers: 1200})
	var wide string
	for _, u := range []string{"wide001", "wide1200"} {
		ids := srv.Customers(testCorp, u)
		if len(ids) != 1 || (wide != "" && ids[0] != wide) {
			t.Fatalf("%s follows %v", u, ids)
		}
		wide = ids[0]
	}
	ctx := context.Background()
	group, err := c.CustomerTags.Add(ctx, wecom.CorpTagAddRequest{GroupName: "level", Tags: []wecom.CorpTagSpec{{Name: "vip"}}})
	if err != nil {
		t.Fatal(err)
	}
	tag := group.Tags[0].ID
	if err := c.CustomerTags.Mark(ctx, wecom.MarkTagRequest{UserID: "wide700", ExternalUserID: wide, AddTags: []string{tag}}); err != nil {
		t.Fatal(err)
	}
	d, err := c.Customers.Get(ctx, wide)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[string]bool)
	for _, f := range d.FollowUsers {
		seen[f.UserID] = true
		tagged := slices.Equal(f.TagIDs, []string{tag})
		if (f.UserID == "wide700") != tagged {
			t.Errorf("follower %s: tags %v %+v", f.UserID, f.TagIDs, f.Tags)
		}
	}
	if len(d.FollowUsers) != 1200 || len(seen) != 1200 || d.ExternalUserID != wide {
		t.Errorf("Get: %s with %d followers (%d distinct), want 1200", d.ExternalUserID, len(d.FollowUsers), len(seen))
	}
	if calls := srv.Stats().Calls[catalog.CustomerGet.Path()]; calls != 3 {
		t.Errorf("%d get calls, want 3 pages of 500", calls)
	}
	for mc, err := range c.Customers.ByMembers(ctx, []string{"wide700", s.Members[0]}) {
		if err != nil {
			t.Fatal(err)
		}
		if tagged := slices.Equal(mc.Follow.TagIDs, []string{tag}); tagged != (mc.Follow.UserID == "wide700") {
			t.Errorf("pair %s: tags %v", pairKey(mc), mc.Follow.TagIDs)
		}
	}
	var ae *wecom.APIError
	if _, err := c.Customers.Get(ctx, "wmnobody"); !errors.As(err, &ae) || ae.Code != wecom.CodeNoCustomers {
		t.Errorf("Get of no customer: %v, want errcode 84061", err)
	}
}

// TestCustomerWire: the requests Get and ByMembers send and the answers
// they read, WeCom's traps included: gender a number, phone numbers as
// numbers in some editions of its examples, tags as objects from
// get and as ids from batch/get_by_user, an empty page that still has a
// cursor, members without a license, and a cursor answered twice.
func TestCustomerWire(t *testing.T) {
	t.Parallel()
	mt := tokenTransport()
	mt.RegisterResponder(http.MethodGet, testBase+"/cgi-bin/externalcontact/get", func(r *http.Request) (*http.Response, error) {
		q := r.URL.Query()
		if q.Get("access_token") != "TOKEN" || q.Get("external_userid") != "wmA" {
			return httpmock.NewStringResponse(200, `{"errcode":40096,"errmsg":"bad"}`), nil
		}
		if q.Get("cursor") == "" {
			return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","external_contact":{"external_userid":"wmA","name":"李四","type":1,"gender":2,"unionid":"oU","external_profile":{"external_attr":[]}},
				"follow_user":[{"userid":"u1","remark":"r","createtime":1700000000,"tags":[{"group_name":"g","tag_name":"vip","tag_id":"etV","type":1},{"group_name":"","tag_name":"mine","type":2}],"remark_mobiles":["138"],"add_way":1,"oper_userid":"u1","wechat_channels":{"nickname":"频道","source":2}}],
				"next_cursor":"C1"}`), nil
		}
		return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","external_contact":{"external_userid":"wmA","name":"李四","type":1,"gender":2},"follow_user":[{"userid":"u2","createtime":1700000001,"remark_mobiles":[13800000000]}]}`), nil
	})
	var bodies []string
	mt.RegisterResponder(http.MethodPost, testBase+"/cgi-bin/externalcontact/batch/get_by_user", func(r *http.Request) (*http.Response, error) {
		var req struct {
			UserIDs []string `json:"userid_list"`
			Cursor  string   `json:"cursor"`
			Limit   int      `json:"limit"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			return nil, err
		}
		bodies = append(bodies, fmt.Sprintf("%s/%s/%d", strings.Join(req.UserIDs, ","), req.Cursor, req.Limit))
		if req.UserIDs[0] == "loop" {
			return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","external_contact_list":[],"next_cursor":"L"}`), nil
		}
		switch req.Cursor {
		case "":
			return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","external_contact_list":[{"external_contact":{"external_userid":"wmA","name":"n","type":2,"gender":0,"corp_name":"ACME"},"follow_info":{"userid":"u1","createtime":1,"tag_id":["etV"],"add_way":3}}],"next_cursor":"P2","fail_info":{"unlicensed_userid_list":["u9"]}}`), nil
		case "P2": // an empty page that is not the last
			return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","external_contact_list":[],"next_cursor":"P3"}`), nil
		case "P3":
			return httpmock.NewStringResponse(200, `{"errcode":0,"errmsg":"ok","external_contact_list":[{"external_contact":{"external_userid":"wmB","name":"m","type":1,"gender":1},"follow_info":{"userid":"u2","createtime":2,"tag_id":[]}}],"next_cursor":"","fail_info":{"unlicensed_userid_list":["u9"]}}`), nil
		}
		return httpmock.NewStringResponse(200, `{"errcode":40058,"errmsg":"invalid cursor"}`), nil
	})
	c := setup(t, wecom.WithTransport(mt))
	ctx := context.Background()
	d, err := c.Customers.Get(ctx, "wmA")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "李四" || d.Gender != 2 || d.Type != wecom.CustomerWeChat || string(d.ExternalProfile) != `{"external_attr":[]}` || len(d.FollowUsers) != 2 {
		t.Errorf("Get = %+v", d)
	}
	if f := d.FollowUsers[0]; !slices.Equal(f.TagIDs, []string{"etV"}) || len(f.Tags) != 2 || f.RemarkMobiles[0] != "138" ||
		f.WeChatChannels == nil || *f.WeChatChannels != (wecom.WeChatChannels{Nickname: "频道", Source: 2}) {
		t.Errorf("first follower %+v", f)
	}
	if f := d.FollowUsers[1]; !slices.Equal(f.RemarkMobiles, []string{"13800000000"}) { // as numbers in some of WeCom's examples
		t.Errorf("second follower %+v, want its phone number read from a JSON number", f)
	}

	var got []string
	var last error
	for mc, err := range c.Customers.ByMembers(ctx, []string{"u1", "u2", "u9"}) {
		if err != nil {
			last = err
			continue
		}
		got = append(got, pairKey(mc)+"/"+strings.Join(mc.Follow.TagIDs, ","))
	}
	if strings.Join(got, " ") != "u1|wmA/etV u2|wmB/" {
		t.Errorf("pairs %v", got)
	}
	var ue *wecom.UnlicensedError
	if !errors.As(last, &ue) || !errors.Is(last, wecom.ErrUnlicensedMembers) || !slices.Equal(ue.UserIDs, []string{"u9"}) {
		t.Errorf("last error %v, want the unlicensed u9", last)
	}
	if strings.Join(bodies, " ") != "u1,u2,u9//100 u1,u2,u9/P2/100 u1,u2,u9/P3/100" {
		t.Errorf("requests %v", bodies)
	}

	// A cursor answered twice ends the walk instead of looping.
	bodies = nil
	n := 0
	for _, err := range c.Customers.ByMembers(ctx, []string{"loop"}) {
		if n++; n > 10 {
			t.Fatal("no end")
		}
		last = err
	}
	if !errors.Is(last, wecom.ErrCursorLoop) || len(bodies) != 2 {
		t.Errorf("loop: %v after %v", last, bodies)
	}
}
