package wecom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom/catalog"
)

// receivedRequest is one request as the fake WeCom endpoint saw it.
type receivedRequest struct {
	method      string
	path        string
	query       url.Values
	contentType string
	body        []byte
}

// endpointRecorder keeps every request that reached one fake endpoint.
type endpointRecorder struct {
	mu   sync.Mutex
	reqs []receivedRequest
}

func (r *endpointRecorder) requests() []receivedRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// recordEndpoint answers method and path with answer(n, req) for the n-th
// request (from 0) and records every request.
func recordEndpoint(t *testing.T, f *fixture, method, path string, answer func(n int, req receivedRequest) string) *endpointRecorder {
	t.Helper()
	rec := &endpointRecorder{}
	f.mt.RegisterResponder(method, testBaseURL+path, func(r *http.Request) (*http.Response, error) {
		var body []byte
		if r.Body != nil {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return nil, err
			}
			body = b
		}
		req := receivedRequest{method: r.Method, path: r.URL.Path, query: r.URL.Query(), contentType: r.Header.Get("Content-Type"), body: body}
		rec.mu.Lock()
		n := len(rec.reqs)
		rec.reqs = append(rec.reqs, req)
		rec.mu.Unlock()
		return httpmock.NewStringResponse(http.StatusOK, answer(n, req)), nil
	})
	return rec
}

// fixedAnswer answers every request with body.
func fixedAnswer(body string) func(int, receivedRequest) string {
	return func(int, receivedRequest) string { return body }
}

// checkJSONBody fails unless got is the JSON document want, compared as
// decoded values (key order and spacing do not matter, absent keys do).
func checkJSONBody(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("request body %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad test: want %q is not JSON: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("request body\n got %s\nwant %s", got, want)
	}
}

// requestCase is one endpoint call and the request it must send.
type requestCase struct {
	name string
	opts []Option
	call func(ctx context.Context, c *Client) error
	// method and path of the request.
	method, path string
	// query holds the parameters besides access_token.
	query url.Values
	// body is the exact JSON body; empty for a GET, which sends none.
	body   string
	answer string
}

// runRequestCases makes each call once against a fresh fixture and checks the
// one request it sent.
func runRequestCases(t *testing.T, tests []requestCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, tt.opts...)
			rec := recordEndpoint(t, f, tt.method, tt.path, fixedAnswer(tt.answer))
			if err := f.record(tt.call(context.Background(), f.c)); err != nil {
				t.Fatalf("call: %v", err)
			}
			reqs := rec.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests reached %s %s, want 1", len(reqs), tt.method, tt.path)
			}
			r := reqs[0]
			if r.method != tt.method || r.path != tt.path {
				t.Errorf("request %s %s, want %s %s", r.method, r.path, tt.method, tt.path)
			}
			if got := r.query["access_token"]; len(got) != 1 || got[0] != f.token() {
				t.Errorf("access_token in query: %d values, want exactly the fixture's token", len(got))
			}
			rest := url.Values{}
			for k, v := range r.query {
				if k != "access_token" {
					rest[k] = v
				}
			}
			want := tt.query
			if want == nil {
				want = url.Values{}
			}
			if !reflect.DeepEqual(rest, want) {
				t.Errorf("query besides access_token = %v, want %v", rest, want)
			}
			if tt.body == "" {
				if len(r.body) != 0 {
					t.Errorf("%s sent body %q, want none", tt.method, r.body)
				}
				return
			}
			if !strings.HasPrefix(r.contentType, "application/json") {
				t.Errorf("Content-Type %q, want application/json", r.contentType)
			}
			if bytes.Contains(r.body, []byte("access_token")) {
				t.Errorf("body %q carries the access token", r.body)
			}
			checkJSONBody(t, r.body, tt.body)
		})
	}
}

// answerCase is one endpoint call, the answer WeCom gives and what the call
// must return.
type answerCase struct {
	name         string
	method, path string
	answer       string
	call         func(ctx context.Context, c *Client) (any, error)
	want         any
}

func runAnswerCases(t *testing.T, tests []answerCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.respond(tt.method, tt.path, tt.answer)
			got, err := tt.call(context.Background(), f.c)
			if f.record(err) != nil {
				t.Fatalf("call: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v\nwant %#v", got, tt.want)
			}
			if n := f.calls(tt.method, tt.path); n != 1 {
				t.Errorf("%d calls, want 1", n)
			}
		})
	}
}

// validationCase is a call with input the SDK must refuse without sending.
type validationCase struct {
	name         string
	method, path string
	call         func(ctx context.Context, c *Client) error
}

func runValidationCases(t *testing.T, tests []validationCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			// A responder, so that a request sent by mistake is counted.
			f.respond(tt.method, tt.path, `{"errcode":0,"errmsg":"ok"}`)
			err := f.record(tt.call(context.Background(), f.c))
			if !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("err = %v, want one matching ErrInvalidRequest", err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("err = %T, want a *ValidationError in its chain", err)
			}
			if n := f.mt.GetTotalCallCount(); n != 0 {
				t.Errorf("%d HTTP requests sent (gettoken included), want none", n)
			}
		})
	}
}

func TestTagServiceRequests(t *testing.T) {
	t.Parallel()
	name32 := strings.Repeat("标", 32) // 32 characters, 96 bytes
	runRequestCases(t, []requestCase{
		{
			name: "Create with id",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Tags.Create(ctx, TagCreateRequest{Name: "UI", ID: 12})
				return err
			},
			method: "POST", path: catalog.TagCreate.Path(),
			body:   `{"tagname":"UI","tagid":12}`,
			answer: `{"errcode":0,"errmsg":"created","tagid":12}`,
		},
		{
			name: "Create without id omits tagid",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Tags.Create(ctx, TagCreateRequest{Name: "UI"})
				return err
			},
			method: "POST", path: catalog.TagCreate.Path(),
			body:   `{"tagname":"UI"}`,
			answer: `{"errcode":0,"errmsg":"created","tagid":7}`,
		},
		{
			name: "Create with a 32-character name",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Tags.Create(ctx, TagCreateRequest{Name: name32})
				return err
			},
			method: "POST", path: catalog.TagCreate.Path(),
			body:   `{"tagname":"` + name32 + `"}`,
			answer: `{"errcode":0,"errmsg":"created","tagid":7}`,
		},
		{
			name: "Update",
			call: func(ctx context.Context, c *Client) error {
				return c.Tags.Update(ctx, TagUpdateRequest{ID: 12, Name: "UI design"})
			},
			method: "POST", path: catalog.TagUpdate.Path(),
			body:   `{"tagid":12,"tagname":"UI design"}`,
			answer: `{"errcode":0,"errmsg":"updated"}`,
		},
		{
			name:   "Delete",
			call:   func(ctx context.Context, c *Client) error { return c.Tags.Delete(ctx, 12) },
			method: "GET", path: catalog.TagDelete.Path(),
			query:  url.Values{"tagid": {"12"}},
			answer: `{"errcode":0,"errmsg":"deleted"}`,
		},
		{
			name: "Members",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Tags.Members(ctx, 12)
				return err
			},
			method: "GET", path: catalog.TagGet.Path(),
			query:  url.Values{"tagid": {"12"}},
			answer: `{"errcode":0,"errmsg":"ok","tagname":"UI","userlist":[],"partylist":[]}`,
		},
		{
			name: "List",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Tags.List(ctx)
				return err
			},
			method: "GET", path: catalog.TagList.Path(),
			answer: `{"errcode":0,"errmsg":"ok","taglist":[]}`,
		},
		{
			name: "AddMembers",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Tags.AddMembers(ctx, TagMembersRequest{TagID: 12, Users: []string{"u1", "u2"}, Parties: []int{4}})
				return err
			},
			method: "POST", path: catalog.TagAddUsers.Path(),
			body:   `{"tagid":12,"userlist":["u1","u2"],"partylist":[4]}`,
			answer: `{"errcode":0,"errmsg":"ok"}`,
		},
		{
			name: "AddMembers users only omits partylist",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Tags.AddMembers(ctx, TagMembersRequest{TagID: 12, Users: []string{"u1"}})
				return err
			},
			method: "POST", path: catalog.TagAddUsers.Path(),
			body:   `{"tagid":12,"userlist":["u1"]}`,
			answer: `{"errcode":0,"errmsg":"ok"}`,
		},
		{
			name: "AddMembers parties only omits userlist",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Tags.AddMembers(ctx, TagMembersRequest{TagID: 12, Parties: []int{2, 4}})
				return err
			},
			method: "POST", path: catalog.TagAddUsers.Path(),
			body:   `{"tagid":12,"partylist":[2,4]}`,
			answer: `{"errcode":0,"errmsg":"ok"}`,
		},
		{
			name: "RemoveMembers",
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Tags.RemoveMembers(ctx, TagMembersRequest{TagID: 12, Users: []string{"u1", "u2"}, Parties: []int{4}})
				return err
			},
			method: "POST", path: catalog.TagDelUsers.Path(),
			body:   `{"tagid":12,"userlist":["u1","u2"],"partylist":[4]}`,
			answer: `{"errcode":0,"errmsg":"deleted"}`,
		},
	})
}

func TestTagServiceAnswers(t *testing.T) {
	t.Parallel()
	create := func(ctx context.Context, c *Client) (any, error) {
		return c.Tags.Create(ctx, TagCreateRequest{Name: "UI"})
	}
	update := func(ctx context.Context, c *Client) (any, error) {
		return nil, c.Tags.Update(ctx, TagUpdateRequest{ID: 12, Name: "UI design"})
	}
	del := func(ctx context.Context, c *Client) (any, error) { return nil, c.Tags.Delete(ctx, 12) }
	members := func(ctx context.Context, c *Client) (any, error) { return c.Tags.Members(ctx, 12) }
	list := func(ctx context.Context, c *Client) (any, error) { return c.Tags.List(ctx) }
	add := func(ctx context.Context, c *Client) (any, error) {
		return c.Tags.AddMembers(ctx, TagMembersRequest{TagID: 12, Users: []string{"u1", "u2", "u3"}, Parties: []int{2, 3, 4}})
	}
	remove := func(ctx context.Context, c *Client) (any, error) {
		return c.Tags.RemoveMembers(ctx, TagMembersRequest{TagID: 12, Users: []string{"u1", "u2", "u3"}, Parties: []int{2, 3, 4}})
	}
	runAnswerCases(t, []answerCase{
		{name: "Create", method: "POST", path: catalog.TagCreate.Path(), call: create,
			answer: `{"errcode":0,"errmsg":"created","tagid":12}`, want: 12},
		{name: "Update", method: "POST", path: catalog.TagUpdate.Path(), call: update,
			answer: `{"errcode":0,"errmsg":"updated"}`, want: nil},
		{name: "Delete", method: "GET", path: catalog.TagDelete.Path(), call: del,
			answer: `{"errcode":0,"errmsg":"deleted"}`, want: nil},
		{name: "Members", method: "GET", path: catalog.TagGet.Path(), call: members,
			answer: `{"errcode":0,"errmsg":"ok","tagname":"乐园","userlist":[{"userid":"zhangsan","name":"李四"}],"partylist":[2]}`,
			want:   &TagMembers{Name: "乐园", Users: []TagUser{{UserID: "zhangsan", Name: "李四"}}, Parties: []int{2}}},
		{name: "List", method: "GET", path: catalog.TagList.Path(), call: list,
			answer: `{"errcode":0,"errmsg":"ok","taglist":[{"tagid":1,"tagname":"a"},{"tagid":2,"tagname":"b"}]}`,
			want:   []Tag{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}},
		{name: "AddMembers all valid", method: "POST", path: catalog.TagAddUsers.Path(), call: add,
			answer: `{"errcode":0,"errmsg":"ok"}`, want: &TagMembersResult{}},
		{name: "AddMembers partly invalid", method: "POST", path: catalog.TagAddUsers.Path(), call: add,
			answer: `{"errcode":0,"errmsg":"ok","invalidlist":"u1|u2","invalidparty":[2,4]}`,
			want:   &TagMembersResult{InvalidUsers: []string{"u1", "u2"}, InvalidParties: []int{2, 4}}},
		{name: "AddMembers empty invalidlist", method: "POST", path: catalog.TagAddUsers.Path(), call: add,
			answer: `{"errcode":0,"errmsg":"ok","invalidlist":"","invalidparty":[]}`,
			want:   &TagMembersResult{}},
		{name: "RemoveMembers all valid", method: "POST", path: catalog.TagDelUsers.Path(), call: remove,
			answer: `{"errcode":0,"errmsg":"deleted"}`, want: &TagMembersResult{}},
		{name: "RemoveMembers partly invalid", method: "POST", path: catalog.TagDelUsers.Path(), call: remove,
			answer: `{"errcode":0,"errmsg":"deleted","invalidlist":"u1|u2","invalidparty":[2,4]}`,
			want:   &TagMembersResult{InvalidUsers: []string{"u1", "u2"}, InvalidParties: []int{2, 4}}},
	})
}

// tagMembersBatch is the body of one addtagusers or deltagusers call; nil
// slices are keys absent from the JSON.
type tagMembersBatch struct {
	TagID   int      `json:"tagid"`
	Users   []string `json:"userlist"`
	Parties []int    `json:"partylist"`
}

// decodeMembersBatch decodes a batch body, failing the test if a list key is
// present but empty (the SDK must omit it instead).
func decodeMembersBatch(t *testing.T, body []byte) tagMembersBatch {
	t.Helper()
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		t.Fatalf("batch body %q: %v", body, err)
	}
	for k := range keys {
		if k != "tagid" && k != "userlist" && k != "partylist" {
			t.Errorf("batch body has unexpected key %q", k)
		}
	}
	var b tagMembersBatch
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("batch body %q: %v", body, err)
	}
	if _, ok := keys["userlist"]; ok && len(b.Users) == 0 {
		t.Errorf("batch body %q has an empty userlist instead of none", body)
	}
	if _, ok := keys["partylist"]; ok && len(b.Parties) == 0 {
		t.Errorf("batch body %q has an empty partylist instead of none", body)
	}
	return b
}

// tagMembersInput returns n user ids and m department ids.
func tagMembersInput(n, m int) ([]string, []int) {
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("u%04d", i)
	}
	parties := make([]int, m)
	for i := range parties {
		parties[i] = i + 1
	}
	return users, parties
}

// concat joins slices into a new one (nil when all are empty).
func concat[T any](parts ...[]T) []T {
	var out []T
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// tagMembersOps are the two batched member operations and their "all invalid"
// errcodes.
var tagMembersOps = []struct {
	name       string
	path       string
	allInvalid int
	run        func(ctx context.Context, c *Client, req TagMembersRequest) (*TagMembersResult, error)
}{
	{"AddMembers", catalog.TagAddUsers.Path(), CodeAllTagUsersInvalid, func(ctx context.Context, c *Client, req TagMembersRequest) (*TagMembersResult, error) {
		return c.Tags.AddMembers(ctx, req)
	}},
	{"RemoveMembers", catalog.TagDelUsers.Path(), CodeAllDelTagUsersInvalid, func(ctx context.Context, c *Client, req TagMembersRequest) (*TagMembersResult, error) {
		return c.Tags.RemoveMembers(ctx, req)
	}},
}

func TestTagServiceMembersBatches(t *testing.T) {
	t.Parallel()
	for _, op := range tagMembersOps {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			users, parties := tagMembersInput(2500, 150)
			answers := []string{
				`{"errcode":0,"errmsg":"ok","invalidlist":"u0001|u0002","invalidparty":[3]}`,
				`{"errcode":0,"errmsg":"ok"}`,
				`{"errcode":0,"errmsg":"ok","invalidlist":"u2499"}`,
			}
			rec := recordEndpoint(t, f, "POST", op.path, func(n int, _ receivedRequest) string { return answers[n] })
			res, err := op.run(context.Background(), f.c, TagMembersRequest{TagID: 12, Users: users, Parties: parties})
			if f.record(err) != nil {
				t.Fatalf("call: %v", err)
			}
			want := []tagMembersBatch{
				{TagID: 12, Users: users[0:1000], Parties: parties[0:100]},
				{TagID: 12, Users: users[1000:2000], Parties: parties[100:150]},
				{TagID: 12, Users: users[2000:2500]},
			}
			reqs := rec.requests()
			if len(reqs) != len(want) {
				t.Fatalf("%d calls, want %d", len(reqs), len(want))
			}
			for i, r := range reqs {
				if got := decodeMembersBatch(t, r.body); !reflect.DeepEqual(got, want[i]) {
					t.Errorf("batch %d: %d users %d parties (first user %v), want %d users %d parties",
						i+1, len(got.Users), len(got.Parties), got.Users[:min(1, len(got.Users))], len(want[i].Users), len(want[i].Parties))
				}
			}
			wantRes := &TagMembersResult{InvalidUsers: []string{"u0001", "u0002", "u2499"}, InvalidParties: []int{3}}
			if !reflect.DeepEqual(res, wantRes) {
				t.Errorf("result %+v, want %+v", res, wantRes)
			}
		})
	}
}

func TestTagServiceMembersAllInvalid(t *testing.T) {
	t.Parallel()
	users, parties := tagMembersInput(2500, 150)
	for _, op := range tagMembersOps {
		allInvalid := fmt.Sprintf(`{"errcode":%d,"errmsg":"all invalid"}`, op.allInvalid)
		tests := []struct {
			name     string
			users    []string
			parties  []int
			answers  []string
			wantErr  bool
			wantRes  *TagMembersResult
			wantCall int
		}{
			{
				name: "middle batch", users: users, parties: parties,
				answers:  []string{`{"errcode":0,"errmsg":"ok","invalidlist":"u0005"}`, allInvalid, `{"errcode":0,"errmsg":"ok"}`},
				wantRes:  &TagMembersResult{InvalidUsers: concat([]string{"u0005"}, users[1000:2000]), InvalidParties: parties[100:150]},
				wantCall: 3,
			},
			{
				name: "last of two batches", users: users[:1500],
				answers:  []string{`{"errcode":0,"errmsg":"ok"}`, allInvalid},
				wantRes:  &TagMembersResult{InvalidUsers: users[1000:1500]},
				wantCall: 2,
			},
			{
				name: "first of two batches, departments only", parties: parties,
				answers:  []string{allInvalid, `{"errcode":0,"errmsg":"ok","invalidparty":[101]}`},
				wantRes:  &TagMembersResult{InvalidParties: concat(parties[0:100], []int{101})},
				wantCall: 2,
			},
			{
				name: "every batch", users: users, parties: parties,
				answers:  []string{allInvalid, allInvalid, allInvalid},
				wantErr:  true,
				wantRes:  &TagMembersResult{InvalidUsers: users, InvalidParties: parties},
				wantCall: 3,
			},
			{
				name: "single batch", users: []string{"u1", "u2"}, parties: []int{4},
				answers:  []string{allInvalid},
				wantErr:  true,
				wantCall: 1,
			},
		}
		for _, tt := range tests {
			t.Run(op.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				f := setup(t)
				rec := recordEndpoint(t, f, "POST", op.path, func(n int, _ receivedRequest) string { return tt.answers[n] })
				res, err := op.run(context.Background(), f.c, TagMembersRequest{TagID: 12, Users: tt.users, Parties: tt.parties})
				f.record(err)
				if n := len(rec.requests()); n != tt.wantCall {
					t.Errorf("%d calls, want %d", n, tt.wantCall)
				}
				if !tt.wantErr {
					if err != nil {
						t.Fatalf("err = %v, want nil", err)
					}
				} else {
					var ae *APIError
					if !errors.As(err, &ae) || ae.Code != op.allInvalid {
						t.Fatalf("err = %v, want an *APIError %d", err, op.allInvalid)
					}
					if ae.Path != op.path {
						t.Errorf("APIError.Path = %q, want %q", ae.Path, op.path)
					}
				}
				if tt.wantRes != nil && !reflect.DeepEqual(res, tt.wantRes) {
					t.Errorf("result: %d invalid users, %d invalid parties; want %d and %d",
						len(res.InvalidUsers), len(res.InvalidParties), len(tt.wantRes.InvalidUsers), len(tt.wantRes.InvalidParties))
				}
			})
		}
	}
}

func TestTagServiceMembersBatchFails(t *testing.T) {
	t.Parallel()
	for _, op := range tagMembersOps {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			users, parties := tagMembersInput(2500, 150)
			answers := []string{
				`{"errcode":0,"errmsg":"ok","invalidlist":"u0007|u0008","invalidparty":[9]}`,
				`{"errcode":60011,"errmsg":"no privilege to access/modify contact/party/agent"}`,
				`{"errcode":0,"errmsg":"ok"}`,
			}
			rec := recordEndpoint(t, f, "POST", op.path, func(n int, _ receivedRequest) string { return answers[n] })
			res, err := op.run(context.Background(), f.c, TagMembersRequest{TagID: 12, Users: users, Parties: parties})
			f.record(err)
			var ae *APIError
			if !errors.As(err, &ae) || ae.Code != CodeNoPrivilege {
				t.Fatalf("err = %v, want an *APIError 60011 in its chain", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "batch 2 of 3") {
				t.Errorf("err %q does not name the failed batch (batch 2 of 3)", msg)
			}
			if n := len(rec.requests()); n != 2 {
				t.Errorf("%d calls, want 2 (none after the failed batch)", n)
			}
			want := &TagMembersResult{InvalidUsers: []string{"u0007", "u0008"}, InvalidParties: []int{9}}
			if !reflect.DeepEqual(res, want) {
				t.Errorf("result %+v, want the first batch's %+v", res, want)
			}
		})
	}
}

func TestTagServiceValidation(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("标", 33)
	create := func(req TagCreateRequest) func(context.Context, *Client) error {
		return func(ctx context.Context, c *Client) error { _, err := c.Tags.Create(ctx, req); return err }
	}
	update := func(req TagUpdateRequest) func(context.Context, *Client) error {
		return func(ctx context.Context, c *Client) error { return c.Tags.Update(ctx, req) }
	}
	del := func(id int) func(context.Context, *Client) error {
		return func(ctx context.Context, c *Client) error { return c.Tags.Delete(ctx, id) }
	}
	members := func(id int) func(context.Context, *Client) error {
		return func(ctx context.Context, c *Client) error { _, err := c.Tags.Members(ctx, id); return err }
	}
	add := func(req TagMembersRequest) func(context.Context, *Client) error {
		return func(ctx context.Context, c *Client) error { _, err := c.Tags.AddMembers(ctx, req); return err }
	}
	remove := func(req TagMembersRequest) func(context.Context, *Client) error {
		return func(ctx context.Context, c *Client) error { _, err := c.Tags.RemoveMembers(ctx, req); return err }
	}
	runValidationCases(t, []validationCase{
		{"Create empty name", "POST", catalog.TagCreate.Path(), create(TagCreateRequest{})},
		{"Create empty name with id", "POST", catalog.TagCreate.Path(), create(TagCreateRequest{ID: 3})},
		{"Create 33-character name", "POST", catalog.TagCreate.Path(), create(TagCreateRequest{Name: long})},
		{"Create invalid UTF-8 name", "POST", catalog.TagCreate.Path(), create(TagCreateRequest{Name: "a\xffb"})},
		{"Create negative id", "POST", catalog.TagCreate.Path(), create(TagCreateRequest{Name: "UI", ID: -1})},
		{"Update zero id", "POST", catalog.TagUpdate.Path(), update(TagUpdateRequest{Name: "UI"})},
		{"Update negative id", "POST", catalog.TagUpdate.Path(), update(TagUpdateRequest{ID: -12, Name: "UI"})},
		{"Update empty name", "POST", catalog.TagUpdate.Path(), update(TagUpdateRequest{ID: 12})},
		{"Update 33-character name", "POST", catalog.TagUpdate.Path(), update(TagUpdateRequest{ID: 12, Name: long})},
		{"Update zero id and empty name", "POST", catalog.TagUpdate.Path(), update(TagUpdateRequest{})},
		{"Delete zero id", "GET", catalog.TagDelete.Path(), del(0)},
		{"Delete negative id", "GET", catalog.TagDelete.Path(), del(-1)},
		{"Members zero id", "GET", catalog.TagGet.Path(), members(0)},
		{"Members negative id", "GET", catalog.TagGet.Path(), members(-1)},
		{"AddMembers zero tag id", "POST", catalog.TagAddUsers.Path(), add(TagMembersRequest{Users: []string{"u1"}})},
		{"AddMembers negative tag id", "POST", catalog.TagAddUsers.Path(), add(TagMembersRequest{TagID: -1, Users: []string{"u1"}})},
		{"AddMembers no users no parties", "POST", catalog.TagAddUsers.Path(), add(TagMembersRequest{TagID: 12})},
		{"AddMembers empty lists", "POST", catalog.TagAddUsers.Path(), add(TagMembersRequest{TagID: 12, Users: []string{}, Parties: []int{}})},
		{"RemoveMembers zero tag id", "POST", catalog.TagDelUsers.Path(), remove(TagMembersRequest{Parties: []int{2}})},
		{"RemoveMembers negative tag id", "POST", catalog.TagDelUsers.Path(), remove(TagMembersRequest{TagID: -1, Parties: []int{2}})},
		{"RemoveMembers no users no parties", "POST", catalog.TagDelUsers.Path(), remove(TagMembersRequest{TagID: 12})},
		{"RemoveMembers empty lists", "POST", catalog.TagDelUsers.Path(), remove(TagMembersRequest{TagID: 12, Users: []string{}, Parties: []int{}})},
	})
}
