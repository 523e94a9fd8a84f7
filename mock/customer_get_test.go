package mock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// batchPage is one answer of batch/get_by_user.
type batchPage struct {
	ErrCode int    `json:"errcode"`
	Next    string `json:"next_cursor"`
	List    []struct {
		Contact struct {
			ExternalUserID string `json:"external_userid"`
			Gender         *int   `json:"gender"`
		} `json:"external_contact"`
		Follow struct {
			UserID string    `json:"userid"`
			TagIDs *[]string `json:"tag_id"`
		} `json:"follow_info"`
	} `json:"external_contact_list"`
}

// TestCustomerBatchPaging: batch/get_by_user pages as WeCom documents it:
// limit 50 by default and clamped to 100, at most 100 members, opaque
// cursors that only go with the member list they were made for.
func TestCustomerBatchPaging(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{})
	seeded := srv.SeedCustomers(corpID, mock.CustomerSeed{Members: 2, Pairs: 260})
	h := srv.Handler()
	tok := directToken(t, h, corpID, secret)
	target := string(catalog.CustomerBatch) + "?access_token=" + tok
	get := func(t *testing.T, users []string, cursor string, limit int) batchPage {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"userid_list": users, "cursor": cursor, "limit": limit})
		rec := direct(context.Background(), h, http.MethodPost, target, string(body))
		var p batchPage
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("answer %s: %v", rec.Body.String(), err)
		}
		return p
	}
	members := seeded.Members
	for _, tc := range []struct{ limit, want int }{{0, 50}, {1, 1}, {100, 100}, {150, 100}} {
		p := get(t, members, "", tc.limit)
		if p.ErrCode != 0 || len(p.List) != tc.want || p.Next == "" {
			t.Errorf("limit %d: errcode %d, %d pairs, next %q; want %d and a cursor", tc.limit, p.ErrCode, len(p.List), p.Next, tc.want)
		}
	}
	first := get(t, members, "", 100)
	if first.List[0].Contact.Gender == nil || first.List[0].Follow.TagIDs == nil {
		t.Errorf("gender or tag_id missing: %+v", first.List[0])
	}
	if strings.Trim(first.Next, "0123456789") == "" {
		t.Errorf("cursor %q reads as an offset", first.Next)
	}
	seen, cursor, pages := map[string]bool{}, "", 0
	for {
		p := get(t, members, cursor, 100)
		if p.ErrCode != 0 {
			t.Fatalf("page %d: errcode %d", pages, p.ErrCode)
		}
		for _, it := range p.List {
			k := it.Follow.UserID + "|" + it.Contact.ExternalUserID
			if seen[k] {
				t.Errorf("pair %s twice", k)
			}
			seen[k] = true
		}
		pages++
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if len(seen) != 260 || pages != 3 {
		t.Errorf("%d pairs in %d pages, want 260 in 3", len(seen), pages)
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("u%d", i)
	}
	for _, tc := range []struct {
		name   string
		users  []string
		cursor string
		limit  int
		want   int
	}{
		{"cursor of another member list", members[:1], first.Next, 100, 40058},
		{"made-up cursor", members, "12345", 100, 40058},
		{"101 members", many, "", 10, 40058},
		{"no members", nil, "", 10, 40058},
		{"negative limit", members, "", -1, 40058},
		{"an empty userid", []string{""}, "", 10, 41009},
	} {
		if p := get(t, tc.users, tc.cursor, tc.limit); p.ErrCode != tc.want {
			t.Errorf("%s: errcode %d, want %d", tc.name, p.ErrCode, tc.want)
		}
	}
}

// TestCustomerGetPaging: get answers 500 followers a page, with a cursor
// for the rest; an unknown customer is 84061.
func TestCustomerGetPaging(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{})
	srv.SeedCustomers(corpID, mock.CustomerSeed{Members: 1, Pairs: 1, WideFollowers: 1001})
	ext := srv.Customers(corpID, "wide001")[0]
	h := srv.Handler()
	tok := directToken(t, h, corpID, secret)
	followers, cursor := 0, ""
	for page := 0; ; page++ {
		rec := direct(context.Background(), h, http.MethodGet, string(catalog.CustomerGet)+"?access_token="+tok+"&external_userid="+ext+"&cursor="+cursor, "")
		var a struct {
			ErrCode int               `json:"errcode"`
			Follow  []json.RawMessage `json:"follow_user"`
			Next    string            `json:"next_cursor"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || a.ErrCode != 0 || page > 3 {
			t.Fatalf("page %d: %s", page, rec.Body.String())
		}
		if want := min(500, 1001-followers); len(a.Follow) != want {
			t.Errorf("page %d: %d followers, want %d", page, len(a.Follow), want)
		}
		followers += len(a.Follow)
		if cursor = a.Next; cursor == "" {
			break
		}
	}
	if followers != 1001 {
		t.Errorf("%d followers", followers)
	}
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"external_userid=wmnobody", 84061},
		{"external_userid=", 40096},
		{"external_userid=" + ext + "&cursor=bogus", 40058},
	} {
		if got := directCode(t, h, http.MethodGet, string(catalog.CustomerGet)+"?access_token="+tok+"&"+tc.query, ""); got != tc.want {
			t.Errorf("%s: errcode %d, want %d", tc.query, got, tc.want)
		}
	}
}

// TestSeedCustomers: a seed makes the pairs asked for, shares some
// customers between members, and makes the same ids again.
func TestSeedCustomers(t *testing.T) {
	t.Parallel()
	a, b := newServer(t, mock.Config{}), newServer(t, mock.Config{})
	seed := mock.CustomerSeed{Members: 3, Pairs: 2000, Shared: 0.2, Seed: 7}
	sa, sb := a.SeedCustomers(corpID, seed), b.SeedCustomers(corpID, seed)
	if sa.Pairs != 2000 || len(sa.Members) != 3 || sa.Customers >= 2000 || sa.Customers < 1500 {
		t.Errorf("seeded %+v", sa)
	}
	for _, u := range sa.Members {
		if strings.Join(a.Customers(corpID, u), ",") != strings.Join(b.Customers(corpID, u), ",") {
			t.Errorf("member %s: the same seed made other customers", u)
		}
	}
	if sb.Customers != sa.Customers {
		t.Errorf("%d and %d customers from one seed", sa.Customers, sb.Customers)
	}
}

// TestWrongMethodRefused: every API answers 43001 or 43002 to a call with
// the other HTTP method than the catalog's, as WeCom does.
func TestWrongMethodRefused(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mock.Config{})
	h := srv.Handler()
	tok := directToken(t, h, corpID, secret)
	for _, e := range catalog.Endpoints() {
		if e.ID == catalog.GetToken {
			continue
		}
		other, want := http.MethodGet, 43002 // require POST
		if e.Method == http.MethodGet {
			other, want = http.MethodPost, 43001
		}
		if got := directCode(t, h, other, string(e.ID)+"?access_token="+tok, "{}"); got != want {
			t.Errorf("%s %s: errcode %d, want %d", other, e.ID, got, want)
		}
	}
}
