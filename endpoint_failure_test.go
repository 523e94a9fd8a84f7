package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom/catalog"
)

// failureEndpoint is one endpoint called with valid input: by its typed
// method, or by its catalog row's sample request. Its method, path and
// whether it is safe to repeat (retried after -1, 6000, transport errors,
// HTTP 5xx and malformed answers) come from the catalog.
type failureEndpoint struct {
	name string
	id   catalog.ID
	call endpointCall

	method, path string
	idempotent   bool
}

// endpointCall calls one endpoint with valid input.
type endpointCall = func(ctx context.Context, c *Client) error

// failureEndpoints derives the list from the catalog: every row that
// carries the corp's access token, called by its typed method (typedCalls),
// or with its sample request while no method calls it (so that a row is
// covered the day it is added; TestEveryEndpointTyped fails meanwhile).
// (The rows of other credentials, which the shared cases' gettoken counts
// do not fit, have tests of their own: suite_test.go; robot_test.go for a
// group robot's, which carry its key and no token at all.)
func failureEndpoints() []failureEndpoint {
	typed := typedCalls()
	var eps []failureEndpoint
	for _, e := range catalog.Endpoints() {
		if e.Token != catalog.CorpToken {
			continue
		}
		ep := rowEndpoint(e)
		if call, ok := typed[e.ID]; ok {
			ep.name, ep.call = strings.TrimPrefix(e.ID.Path(), "/cgi-bin/"), call
		}
		eps = append(eps, ep)
	}
	return eps
}

// rowEndpoints calls every row of the catalog that carries the corp's
// access token through the pipeline with its sample request.
func rowEndpoints() []failureEndpoint {
	var eps []failureEndpoint
	for _, e := range catalog.Endpoints() {
		if e.Token == catalog.CorpToken {
			eps = append(eps, rowEndpoint(e))
		}
	}
	return eps
}

// rowEndpoint calls e through the pipeline with its sample request.
func rowEndpoint(e catalog.Endpoint) failureEndpoint {
	return failureEndpoint{name: "row " + e.ID.Path(), id: e.ID, method: e.Method, path: e.ID.Path(), idempotent: e.Repeatable,
		call: func(ctx context.Context, c *Client) error {
			q, body, err := e.SampleRequest()
			if err != nil {
				return err
			}
			cl := &call{id: e.ID, query: q}
			switch {
			case e.Body == catalog.MultipartBody:
				cl.upload = &upload{field: "media", filename: "a.txt", size: 12, r: strings.NewReader("hello, wecom")}
			case body != nil:
				cl.body = json.RawMessage(body)
			}
			if e.Answer == catalog.FileAnswer {
				cl.download = &download{w: io.Discard, chunk: catalog.MediaChunkBytes, total: -1}
			}
			return c.p.perform(ctx, cl)
		}}
}

// answered drops the answer of a typed method's call.
func answered(f func(ctx context.Context, c *Client) (any, error)) endpointCall {
	return func(ctx context.Context, c *Client) error {
		_, err := f(ctx, c)
		return err
	}
}

// typedCalls calls each row's typed method with valid input: the one part
// of the failure cases kept by hand.
func typedCalls() map[catalog.ID]endpointCall {
	members := TagMembersRequest{TagID: 12, Users: []string{"u1"}, Parties: []int{4}}
	transfer := TransferRequest{HandoverUserID: "zhangsan", TakeoverUserID: "lisi", ExternalUserIDs: []string{"wmX"}}
	return map[catalog.ID]endpointCall{
		catalog.TagCreate: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Tags.Create(ctx, TagCreateRequest{Name: "UI"})
		}),
		catalog.TagUpdate: func(ctx context.Context, c *Client) error {
			return c.Tags.Update(ctx, TagUpdateRequest{ID: 12, Name: "UI design"})
		},
		catalog.TagDelete: func(ctx context.Context, c *Client) error { return c.Tags.Delete(ctx, 12) },
		catalog.TagGet: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Tags.Members(ctx, 12)
		}),
		catalog.TagList: answered(func(ctx context.Context, c *Client) (any, error) { return c.Tags.List(ctx) }),
		catalog.TagAddUsers: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Tags.AddMembers(ctx, members)
		}),
		catalog.TagDelUsers: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Tags.RemoveMembers(ctx, members)
		}),
		catalog.CorpTagList: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.CustomerTags.List(ctx, CorpTagListRequest{GroupIDs: []string{"etG"}})
		}),
		catalog.CorpTagAdd: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.CustomerTags.Add(ctx, CorpTagAddRequest{GroupID: "etG", Tags: []CorpTagSpec{{Name: "VIP"}}})
		}),
		catalog.CorpTagEdit: func(ctx context.Context, c *Client) error {
			return c.CustomerTags.Edit(ctx, CorpTagEditRequest{ID: "etT", Name: "VIP"})
		},
		catalog.CorpTagDel: func(ctx context.Context, c *Client) error {
			return c.CustomerTags.Delete(ctx, CorpTagDeleteRequest{TagIDs: []string{"etT"}})
		},
		catalog.MarkTag: func(ctx context.Context, c *Client) error {
			return c.CustomerTags.Mark(ctx, MarkTagRequest{UserID: "zhangsan", ExternalUserID: "wmX", AddTags: []string{"etT"}})
		},
		catalog.MediaUpload: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Media.Upload(ctx, UploadRequest{Type: MediaFile, Filename: "a.txt", Body: strings.NewReader("hello, wecom")})
		}),
		catalog.MediaGet: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Media.Download(ctx, "3a8asd892asd8asd", io.Discard)
		}),
		catalog.AuthGetUserInfo: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Auth.SignIn(ctx, "CODE")
		}),
		catalog.AuthGetUserDetail: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Auth.PrivateInfo(ctx, "USER_TICKET")
		}),
		catalog.MediaUploadImage: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Media.UploadImage(ctx, ImageRequest{Filename: "a.png", Body: strings.NewReader("hello, wecom")})
		}),
		catalog.MediaUploadByURL: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Media.UploadByURL(ctx, UploadByURLRequest{Type: MediaVideo, Filename: "video.mp4", URL: "https://xxxx", MD5: "MD5"})
		}),
		catalog.MediaUploadByURLResult: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Media.Job("jobid_S0MrnndvRG5fadSlLwiBqiDDbM143UqTmKP3152FZk4").Result(ctx)
		}),
		catalog.MediaGetJSSDK: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Media.DownloadVoice(ctx, "3a8asd892asd8asd", io.Discard)
		}),
		catalog.MessageSend: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Messages.Send(ctx, Message{ToUser: []string{"zhangsan", "lisi"}, AgentID: 1000002, Content: &TextMessage{Content: "hello"}})
		}),
		catalog.SendWelcomeMsg: func(ctx context.Context, c *Client) error {
			return c.Customers.Welcome(ctx, WelcomeMessage{WelcomeCode: "CALLBACK_CODE", Text: "hello"})
		},
		catalog.MessageRecall: func(ctx context.Context, c *Client) error {
			return c.Messages.Recall(ctx, "vcT8gGc-7dFb4bxT35ONjBDz901sLlXPZw1DAMC_Gc26qRpK-AK5sTJkkb0128t")
		},
		catalog.MessageUpdateCard: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Messages.UpdateTemplateCard(ctx, UpdateTemplateCardRequest{ResponseCode: "response_code", AgentID: 1,
				Users: []string{"userid1", "userid2"}, ReplaceButton: "replace_name"})
		}),
		catalog.MessageStatistics: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Messages.Statistics(ctx, StatisticsToday)
		}),
		catalog.LinkedMessageSend: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Messages.SendLinked(ctx, LinkedMessage{ToUser: []string{"zhangsan", "wwlinked/lisi"}, AgentID: 1000002, Content: &TextMessage{Content: "hello"}})
		}),
		catalog.AppChatCreate: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.AppChats.Create(ctx, AppChatCreateRequest{Name: "NAME", Owner: "zhangsan", Members: []string{"zhangsan", "lisi"}, ChatID: "CHATID"})
		}),
		catalog.AppChatUpdate: func(ctx context.Context, c *Client) error {
			return c.AppChats.Update(ctx, AppChatUpdateRequest{ChatID: "CHATID", AddMembers: []string{"wangwu"}})
		},
		catalog.AppChatGet: answered(func(ctx context.Context, c *Client) (any, error) { return c.AppChats.Get(ctx, "CHATID") }),
		catalog.AppChatSend: func(ctx context.Context, c *Client) error {
			// The chat's members are known, as after a Create: the send
			// is the call's only request.
			c.AppChats.chats.put("CHATID", []string{"zhangsan", "lisi"}, c.p.cfg.now())
			return c.AppChats.Send(ctx, AppChatMessage{ChatID: "CHATID", Content: &TextMessage{Content: "hello"}})
		},
		catalog.JSAPITicket:    answered(func(ctx context.Context, c *Client) (any, error) { return c.JSAPITicket(ctx) }),
		catalog.AgentTicket:    answered(func(ctx context.Context, c *Client) (any, error) { return c.AgentTicket(ctx) }),
		catalog.FollowUserList: answered(func(ctx context.Context, c *Client) (any, error) { return c.Customers.FollowUsers(ctx) }),
		catalog.CustomerList: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Customers.List(ctx, "zhangsan")
		}),
		catalog.CustomerRemark: func(ctx context.Context, c *Client) error {
			return c.Customers.Remark(ctx, RemarkRequest{UserID: "zhangsan", ExternalUserID: "wmX", Remark: "Li Si"})
		},
		catalog.CustomerGet: answered(func(ctx context.Context, c *Client) (any, error) { return c.Customers.Get(ctx, "wmX") }),
		catalog.CustomerBatch: func(ctx context.Context, c *Client) error {
			return walkErr(c.Customers.ByMembers(ctx, []string{"zhangsan"}))
		},
		catalog.GroupChatList: func(ctx context.Context, c *Client) error {
			return walkErr(c.Customers.GroupChats(ctx, GroupChatListRequest{OwnerUserIDs: []string{"zhangsan"}}))
		},
		catalog.GroupChatGet: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Customers.GroupChat(ctx, "wrX", true)
		}),
		catalog.GroupChatTransfer: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Customers.TransferGroupChats(ctx, []string{"wrX"}, "lisi")
		}),
		catalog.TransferCustomer: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Customers.Transfer(ctx, transfer)
		}),
		catalog.ResignedTransferCustomer: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Customers.TransferResigned(ctx, transfer)
		}),
		catalog.TransferResult: func(ctx context.Context, c *Client) error {
			return walkErr(c.Customers.TransferResults(ctx, "zhangsan", "lisi"))
		},
		catalog.ResignedTransferResult: func(ctx context.Context, c *Client) error {
			return walkErr(c.Customers.ResignedTransferResults(ctx, "zhangsan", "lisi"))
		},
		catalog.UserGet: answered(func(ctx context.Context, c *Client) (any, error) { return c.Users.Get(ctx, "zhangsan") }),
		catalog.UserListID: func(ctx context.Context, c *Client) error {
			return walkErr(c.Users.IDs(ctx, 0))
		},
		catalog.UserList: answered(func(ctx context.Context, c *Client) (any, error) { return c.Users.List(ctx, 1) }),
		catalog.UserSimpleList: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Users.SimpleList(ctx, 1)
		}),
		catalog.UserIDByMobile: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Users.ByMobile(ctx, "13430388888")
		}),
		catalog.UserIDByEmail: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Users.ByEmail(ctx, "zhangsan@gzdev.com", EmailCorp)
		}),
		catalog.UserToOpenID: answered(func(ctx context.Context, c *Client) (any, error) { return c.Users.ToOpenID(ctx, "zhangsan") }),
		catalog.OpenIDToUser: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Users.FromOpenID(ctx, "oDjGHs-1yCnGrRovBj2yHij5JAAA")
		}),
		catalog.UserCreate: func(ctx context.Context, c *Client) error {
			return c.Users.Create(ctx, UserRequest{UserID: "zhangsan", Name: Ptr("张三"), Departments: []int{1}})
		},
		catalog.UserUpdate: func(ctx context.Context, c *Client) error {
			return c.Users.Update(ctx, UserRequest{UserID: "zhangsan", Name: Ptr("李四")})
		},
		catalog.UserDelete: func(ctx context.Context, c *Client) error { return c.Users.Delete(ctx, "zhangsan") },
		catalog.UserBatchDelete: func(ctx context.Context, c *Client) error {
			return c.Users.BatchDelete(ctx, []string{"zhangsan", "lisi"})
		},
		catalog.BatchInvite: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Users.Invite(ctx, InviteRequest{Users: []string{"zhangsan"}})
		}),
		catalog.DepartmentSimpleList: answered(func(ctx context.Context, c *Client) (any, error) { return c.Departments.List(ctx, 1) }),
		catalog.DepartmentGet:        answered(func(ctx context.Context, c *Client) (any, error) { return c.Departments.Get(ctx, 1) }),
		catalog.DepartmentCreate: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Departments.Create(ctx, DepartmentRequest{Name: "广州研发中心", ParentID: 1})
		}),
		catalog.DepartmentUpdate: func(ctx context.Context, c *Client) error {
			return c.Departments.Update(ctx, DepartmentRequest{ID: 2, Name: "研发中心"})
		},
		catalog.DepartmentDelete: func(ctx context.Context, c *Client) error { return c.Departments.Delete(ctx, 2) },
		catalog.BatchSyncUser: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Jobs.SyncUsers(ctx, JobRequest{MediaID: "xxxxxx", ToInvite: Ptr(true)})
		}),
		catalog.BatchReplaceUser: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Jobs.ReplaceUsers(ctx, JobRequest{MediaID: "xxxxxx"})
		}),
		catalog.BatchReplaceParty: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Jobs.ReplaceDepartments(ctx, JobRequest{MediaID: "xxxxxx"})
		}),
		catalog.BatchGetResult: answered(func(ctx context.Context, c *Client) (any, error) { return c.Jobs.Result(ctx, "JOBID") }),
		catalog.UserIDToOpenUserID: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Users.ToOpenUserIDs(ctx, []string{"zhangsan", "lisi"})
		}),
		catalog.NewExternalUserID: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Customers.NewExternalUserIDs(ctx, []string{"wmAAAAAAA"})
		}),
		catalog.UnionIDToExternalUserID: answered(func(ctx context.Context, c *Client) (any, error) {
			return c.Customers.FromUnionID(ctx, UnionIDRequest{UnionID: "oAAAAAAA", OpenID: "oBBBBB", SubjectType: 1})
		}),
	}
}

// walkErr walks seq to its end and returns the error it ends with, if any.
func walkErr[T any](seq iter.Seq2[T, error]) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestEveryEndpointTyped: every endpoint of the catalog that carries the
// corp's access token has a typed call in typedCalls, and every one there
// is such a row, so the failure cases reach them all.
func TestEveryEndpointTyped(t *testing.T) {
	t.Parallel()
	for id := range typedCalls() {
		if e, ok := catalog.Lookup(id.Path()); !ok || e.Token != catalog.CorpToken {
			t.Errorf("typedCalls calls %s, which the catalog does not declare with the corp's token", id)
		}
	}
	for _, ep := range failureEndpoints() {
		if strings.HasPrefix(ep.name, "row ") {
			t.Errorf("%s is in the catalog but no typed method here calls it", ep.id)
		}
	}
}

func TestEndpointFailures(t *testing.T) {
	t.Parallel()
	for _, ep := range failureEndpoints() {
		t.Run(ep.name, func(t *testing.T) {
			t.Parallel()
			testEndpointFailure(t, ep)
		})
	}
}

// endpointSentinels are every class sentinel a caller may branch on.
var endpointSentinels = []error{
	ErrConcurrencyLimited, ErrRateLimited, ErrTokenInvalid, ErrBadCredentials, ErrSystemBusy, ErrInvalidRequest,
}

// testEndpointFailure drives one endpoint through every shared failure case,
// each against a fresh fixture (setup's policy: MaxRetries 3,
// MaxConcurrencyRetries 5).
func testEndpointFailure(t *testing.T, ep failureEndpoint) {
	t.Helper()
	busyAttempts := 1
	if ep.idempotent {
		busyAttempts = 1 + 3
	}
	codes := []struct {
		code     int
		sentinel error // nil: none matches
		attempts int
		tokens   int // gettoken calls
	}{
		{CodeSystemBusy, ErrSystemBusy, busyAttempts, 1},
		{CodeDataVersionConflict, ErrSystemBusy, busyAttempts, 1},
		{CodeInvalidAccessToken, ErrTokenInvalid, 2, 2},
		{CodeAccessTokenExpired, ErrTokenInvalid, 2, 2},
		{CodeAccessTokenMissing, ErrTokenInvalid, 1, 1},
		{CodeFrequencyLimited, ErrRateLimited, 1, 1},
		{CodeConcurrencyLimited, ErrConcurrencyLimited, 1 + 5, 1},
		{CodeAPINotAllowed, nil, 1, 1},
		{CodeNoPrivilege, nil, 1, 1},
		{CodeIPNotTrusted, nil, 1, 1},
		{CodeInvalidTagID, nil, 1, 1},
		{CodeTagNotOwned, nil, 1, 1},
		{CodeTokenOfOtherApp, nil, 1, 1},
	}
	for _, tc := range codes {
		t.Run(fmt.Sprintf("errcode %d", tc.code), func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			msg := fmt.Sprintf("fake error %d", tc.code)
			f.respond(ep.method, ep.path, fmt.Sprintf(`{"errcode":%d,"errmsg":%q}`, tc.code, msg))
			err := f.record(ep.call(context.Background(), f.c))

			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want an *APIError in its chain", err, err)
			}
			if ae.Code != tc.code || ae.Path != ep.path || ae.Message != msg {
				t.Errorf("APIError{Code %d, Path %q, Message %q}, want {%d, %q, %q}", ae.Code, ae.Path, ae.Message, tc.code, ep.path, msg)
			}
			if tc.code == CodeFrequencyLimited {
				var rl *RateLimitError
				if !errors.As(err, &rl) {
					t.Fatalf("err = %T, want a *RateLimitError", err)
				}
				if rl.Path != ep.path || rl.RetryAfter != time.Minute {
					t.Errorf("RateLimitError{Path %q, RetryAfter %s}, want {%q, 1m0s}", rl.Path, rl.RetryAfter, ep.path)
				}
			}
			for _, s := range endpointSentinels {
				if got, want := errors.Is(err, s), s == tc.sentinel; got != want {
					t.Errorf("errors.Is(err, %q) = %t, want %t", s, got, want)
				}
			}
			if n := f.calls(ep.method, ep.path); n != tc.attempts {
				t.Errorf("%d attempts, want %d", n, tc.attempts)
			}
			if n := f.calls("GET", catalog.GetToken.Path()); n != tc.tokens {
				t.Errorf("%d gettoken calls, want %d", n, tc.tokens)
			}

			if tc.code != CodeFrequencyLimited {
				return
			}
			// The API now cools down: the next call fails without a request.
			total := f.mt.GetTotalCallCount()
			err = f.record(ep.call(context.Background(), f.c))
			if !errors.Is(err, ErrRateLimited) {
				t.Fatalf("call during the cooldown: err = %v, want ErrRateLimited", err)
			}
			var rl *RateLimitError
			if !errors.As(err, &rl) {
				t.Fatalf("call during the cooldown: err = %T, want a *RateLimitError", err)
			}
			if rl.RetryAfter <= 0 || rl.RetryAfter > time.Minute {
				t.Errorf("call during the cooldown: RetryAfter %s, want in (0, 1m]", rl.RetryAfter)
			}
			if n := f.mt.GetTotalCallCount() - total; n != 0 {
				t.Errorf("call during the cooldown sent %d requests, want none", n)
			}
		})
	}

	t.Run("transport error", func(t *testing.T) {
		t.Parallel()
		// A broken connection abandons the attempt: its customer's slot
		// is held that long before the retry (the lease TTL by default).
		f := setup(t, WithAbandonedHold(100*time.Millisecond))
		cause := errors.New("connection reset by peer")
		f.mt.RegisterResponder(ep.method, testBaseURL+ep.path, httpmock.NewErrorResponder(cause))
		err := f.record(ep.call(context.Background(), f.c))
		if err == nil {
			t.Fatal("err = nil, want the transport error")
		}
		if !errors.Is(err, cause) {
			t.Errorf("err = %v, want it to wrap the transport error", err)
		}
		var ae *APIError
		var re *ResponseError
		if errors.As(err, &ae) || errors.As(err, &re) {
			t.Errorf("err = %v, want neither *APIError nor *ResponseError", err)
		}
		if n := f.calls(ep.method, ep.path); n != busyAttempts {
			t.Errorf("%d attempts, want %d", n, busyAttempts)
		}
	})

	// Answers that are not WeCom's are never a success: a gateway's JSON,
	// null, an array, a string, an empty object, half an object.
	for _, body := range []string{"{not json", `{"message":"blocked"}`, `null`, `[]`, `"ok"`, `{}`, ` {"errmsg":"ok"}`} {
		t.Run("not WeCom's "+body, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.respond(ep.method, ep.path, body)
			err := f.record(ep.call(context.Background(), f.c))
			var re *ResponseError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v (%T), want a *ResponseError", err, err)
			}
			if re.StatusCode != http.StatusOK || re.Err == nil || re.Path != ep.path {
				t.Errorf("ResponseError{StatusCode %d, Path %q, Err %v}, want 200, %q and a decoding error", re.StatusCode, re.Path, re.Err, ep.path)
			}
			if n := f.calls(ep.method, ep.path); n != busyAttempts {
				t.Errorf("%d attempts, want %d", n, busyAttempts)
			}
		})
	}

	t.Run("HTTP 502", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.mt.RegisterResponder(ep.method, testBaseURL+ep.path, httpmock.NewStringResponder(http.StatusBadGateway, "<html>502 Bad Gateway</html>"))
		err := f.record(ep.call(context.Background(), f.c))
		var re *ResponseError
		if !errors.As(err, &re) {
			t.Fatalf("err = %v (%T), want a *ResponseError", err, err)
		}
		if re.StatusCode != http.StatusBadGateway || re.Path != ep.path {
			t.Errorf("ResponseError{StatusCode %d, Path %q}, want 502, %q", re.StatusCode, re.Path, ep.path)
		}
		if n := f.calls(ep.method, ep.path); n != busyAttempts {
			t.Errorf("%d attempts, want %d", n, busyAttempts)
		}
	})

	for _, warm := range []bool{false, true} {
		name := "cancelled context, no token yet"
		if warm {
			name = "cancelled context, token cached"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.respond(ep.method, ep.path, `{"errcode":0,"errmsg":"ok"}`)
			if warm {
				if _, err := f.c.p.corp().token(context.Background()); f.record(err) != nil {
					t.Fatalf("warming the token: %v", err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := f.record(ep.call(ctx, f.c))
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if n := f.calls(ep.method, ep.path); n != 0 {
				t.Errorf("%d API requests sent, want none", n)
			}
			if warm {
				if n := f.mt.GetTotalCallCount(); n != 1 {
					t.Errorf("%d HTTP requests in all, want only the warming gettoken", n)
				}
				return
			}
			// Let a token fetch the call may have started finish inside the test.
			if _, err := f.c.p.corp().token(context.Background()); f.record(err) != nil {
				t.Errorf("token after the cancelled call: %v", err)
			}
		})
	}
}

// TestRowFailures: the failure cases run from a row's sample request alone,
// as they do for a row that no typed method calls yet.
func TestRowFailures(t *testing.T) {
	t.Parallel()
	ran := 0
	defer func() {
		if ran != 3 {
			t.Errorf("%d rows ran, want 3 (mark_tag, media/get, tag/list)", ran)
		}
	}()
	for _, ep := range rowEndpoints() {
		if ep.id != catalog.MarkTag && ep.id != catalog.MediaGet && ep.id != catalog.TagList {
			continue
		}
		ran++
		t.Run(ep.name, func(t *testing.T) {
			t.Parallel()
			testEndpointFailure(t, ep)
		})
	}
}
