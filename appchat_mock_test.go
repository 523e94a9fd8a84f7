package wecom_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/throttle"
)

// wantCode fails unless err is WeCom's answer code.
func wantCode(t *testing.T, what string, err error, code int) {
	t.Helper()
	var ae *wecom.APIError
	if !errors.As(err, &ae) || ae.Code != code {
		t.Errorf("%s: %v, want errcode %d", what, err, code)
	}
}

// TestAppChatLifecycle: a chat created, changed and read through the mock;
// each message reaches the chat's members of the moment, counted on them
// without reading the chat again, as the client knows them from its own
// create and update.
func TestAppChatLifecycle(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{}, "zhangsan", "lisi", "wangwu")
	c := setup(t, on(srv), wecom.WithAgentID(1000002))
	ctx := context.Background()
	id, err := c.AppChats.Create(ctx, wecom.AppChatCreateRequest{Name: "项目群", Members: []string{"zhangsan", "lisi"}})
	if err != nil || id == "" {
		t.Fatalf("Create = %q, %v", id, err)
	}
	text := &wecom.TextMessage{Content: "hi"}
	if err := c.AppChats.Send(ctx, wecom.AppChatMessage{ChatID: id, Content: text}); err != nil {
		t.Fatal(err)
	}
	if err := c.AppChats.Update(ctx, wecom.AppChatUpdateRequest{ChatID: id, Owner: "lisi", AddMembers: []string{"wangwu"}, RemoveMembers: []string{"zhangsan"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.AppChats.Send(ctx, wecom.AppChatMessage{ChatID: id, Content: text}); err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]int{"zhangsan": 1, "lisi": 2, "wangwu": 1} {
		if got := srv.AppChatTally(testCorp, u); got.Delivered != want || got.Dropped != 0 {
			t.Errorf("%s: %+v, want %d delivered, none dropped", u, got, want)
		}
	}
	if n := srv.Stats().Calls[catalog.AppChatGet.Path()]; n != 0 {
		t.Errorf("%d appchat/get, want none: the client knew the members", n)
	}
	chat, err := c.AppChats.Get(ctx, id)
	if err != nil || chat.Owner != "lisi" || !slices.Equal(chat.Members, []string{"lisi", "wangwu"}) || chat.Name != "项目群" {
		t.Errorf("Get = %+v, %v; want owner lisi, members lisi and wangwu", chat, err)
	}
}

// TestAppChatErrors: the mock answers WeCom's codes for a chatid taken, a
// member not in the directory or not in the chat, too few members, a chat
// that does not exist, and a chat of another app; a message to an unknown
// chat fails on reading its members and is not sent.
func TestAppChatErrors(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{}, "zhangsan", "lisi")
	c := setup(t, on(srv), wecom.WithAgentID(1000002))
	srv.AddApp(testCorp, "secret-other")
	ctx := context.Background()
	two := []string{"zhangsan", "lisi"}
	if _, err := c.AppChats.Create(ctx, wecom.AppChatCreateRequest{Members: two, ChatID: "CHATID"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.AppChats.Create(ctx, wecom.AppChatCreateRequest{Members: two, ChatID: "CHATID"})
	wantCode(t, "a chatid taken", err, wecom.CodeChatIDExists)
	_, err = c.AppChats.Create(ctx, wecom.AppChatCreateRequest{Members: []string{"zhangsan", "ghost"}})
	wantCode(t, "a member not in the directory", err, wecom.CodeInvalidChatMember)
	err = c.AppChats.Update(ctx, wecom.AppChatUpdateRequest{ChatID: "CHATID", RemoveMembers: []string{"ghost"}})
	wantCode(t, "removing a member not in the chat", err, wecom.CodeInvalidChatMember)
	err = c.AppChats.Update(ctx, wecom.AppChatUpdateRequest{ChatID: "CHATID", RemoveMembers: []string{"lisi"}})
	wantCode(t, "one member left", err, wecom.CodeChatMemberCount)
	err = c.AppChats.Update(ctx, wecom.AppChatUpdateRequest{ChatID: "NOSUCH", Name: "n"})
	wantCode(t, "updating no chat", err, wecom.CodeChatNotFound)

	err = c.AppChats.Send(ctx, wecom.AppChatMessage{ChatID: "NOSUCH", Content: &wecom.TextMessage{Content: "hi"}})
	wantCode(t, "a message to no chat", err, wecom.CodeChatNotFound)
	if n := srv.Stats().Calls[catalog.AppChatSend.Path()]; n != 0 {
		t.Errorf("%d appchat/send, want none", n)
	}

	other, err := wecom.New(testCorp, "secret-other", wecom.WithBaseURL(testBase), wecom.WithTransport(srvTransport(srv)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.AppChats.Get(ctx, "CHATID")
	wantCode(t, "another app's chat", err, wecom.CodeChatNotOwned)
}

// TestAppChatMembersRead: a client that did not create a chat reads its
// members once before its first message, and again once what it knows is
// KnownChatTTL old, so that a member added by another client is counted.
func TestAppChatMembersRead(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newMock(t, mock.Config{}, "zhangsan", "lisi", "wangwu")
		creator := setup(t, on(srv), wecom.WithAgentID(1000002))
		sender := setup(t, wecom.WithTransport(srvTransport(srv)))
		ctx := context.Background()
		id, err := creator.AppChats.Create(ctx, wecom.AppChatCreateRequest{Members: []string{"zhangsan", "lisi"}})
		if err != nil {
			t.Fatal(err)
		}
		msg := wecom.AppChatMessage{ChatID: id, Content: &wecom.TextMessage{Content: "hi"}}
		for range 2 {
			if err := sender.AppChats.Send(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
		if n := srv.Stats().Calls[catalog.AppChatGet.Path()]; n != 1 {
			t.Errorf("%d appchat/get for two messages, want 1", n)
		}
		if err := creator.AppChats.Update(ctx, wecom.AppChatUpdateRequest{ChatID: id, AddMembers: []string{"wangwu"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(wecom.KnownChatTTL)
		if err := sender.AppChats.Send(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if n := srv.Stats().Calls[catalog.AppChatGet.Path()]; n != 2 {
			t.Errorf("%d appchat/get after KnownChatTTL, want 2", n)
		}
		if got := srv.AppChatTally(testCorp, "wangwu"); got.Delivered != 1 {
			t.Errorf("wangwu: %+v, want 1 delivered", got)
		}
	})
}

// chatRun creates chats of members (one per list) and sends each perChat
// messages, a goroutine per chat, in a synctest bubble; it returns each
// member's tally and the virtual time it took.
func chatRun(t *testing.T, chats [][]string, perChat int, opts ...wecom.Option) (map[string]mock.MessageTally, time.Duration) {
	t.Helper()
	var users []string
	for _, ms := range chats {
		users = append(users, ms...)
	}
	srv := newMock(t, mock.Config{}, users...)
	c := setup(t, append([]wecom.Option{on(srv), wecom.WithAgentID(1000002)}, opts...)...)
	ctx := context.Background()
	ids := make([]string, len(chats))
	for i, ms := range chats {
		id, err := c.AppChats.Create(ctx, wecom.AppChatCreateRequest{Members: ms})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for range perChat {
				if err := c.AppChats.Send(ctx, wecom.AppChatMessage{ChatID: id, Content: &wecom.TextMessage{Content: "n"}}); err != nil {
					t.Errorf("to %s: %v", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	tallies := map[string]mock.MessageTally{}
	for _, u := range users {
		tallies[u] = srv.AppChatTally(testCorp, u)
	}
	return tallies, time.Since(start)
}

// TestAppChatNeverDropped: two chats sharing a member, 150 messages to
// each: the shared member receives 300, more than the 200 a minute a
// member receives in groups. All are delivered, none dropped, in a little
// over the minute the window requires; without the rule, the mock drops
// some, as WeCom would.
func TestAppChatNeverDropped(t *testing.T) {
	t.Parallel()
	chats := [][]string{{"zhangsan", "lisi"}, {"zhangsan", "wangwu"}}
	synctest.Test(t, func(t *testing.T) {
		tallies, took := chatRun(t, chats, 150)
		want := map[string]int{"zhangsan": 300, "lisi": 150, "wangwu": 150}
		for u, tl := range tallies {
			if tl.Delivered != want[u] || tl.Dropped != 0 {
				t.Errorf("%s: %+v, want %d delivered and none dropped", u, tl, want[u])
			}
		}
		if took < time.Minute || took > 62*time.Second {
			t.Errorf("took %s, want just over the minute 300 messages to one member need", took)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		tallies, _ := chatRun(t, chats, 150, wecom.WithoutRule(catalog.AppChatSend.Path(), catalog.RuleChatMemberMinute))
		if tallies["zhangsan"].Dropped == 0 {
			t.Error("without the per-minute rule nothing was dropped: the test cannot see a drop")
		}
	})
}

// TestAppChatMembersAtLimit: a message to a chat whose members have no
// room, under a context that cannot wait for it, fails at once naming
// them, and nothing is sent.
func TestAppChatMembersAtLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newMock(t, mock.Config{}, "zhangsan", "lisi")
		c := setup(t, on(srv), wecom.WithAgentID(1000002))
		ctx := context.Background()
		id, err := c.AppChats.Create(ctx, wecom.AppChatCreateRequest{Members: []string{"zhangsan", "lisi"}})
		if err != nil {
			t.Fatal(err)
		}
		msg := wecom.AppChatMessage{ChatID: id, Content: &wecom.TextMessage{Content: "n"}}
		for range 200 {
			if err := c.AppChats.Send(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
		short, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err = c.AppChats.Send(short, msg)
		var rl *wecom.RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("Send at the window = %v, want a *RateLimitError", err)
		}
		if got := slices.Sorted(slices.Values(rl.Members)); !slices.Equal(got, []string{"lisi", "zhangsan"}) {
			t.Errorf("RateLimitError.Members = %v, want lisi and zhangsan", rl.Members)
		}
		for _, u := range []string{"zhangsan", "lisi"} {
			if got := srv.AppChatTally(testCorp, u); got.Delivered != 200 || got.Dropped != 0 {
				t.Errorf("%s: %+v, want 200 delivered, none dropped", u, got)
			}
		}
	})
}

// TestAppChatPushWeighted: a message counts each member of its chat
// against the corp's person-messages a minute: with that rule at 4, two
// messages to a chat of two fill it, and a third that cannot wait is
// refused.
func TestAppChatPushWeighted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e, _ := catalog.Lookup(catalog.AppChatSend.Path())
		rule, ok := e.Rule(catalog.RulePushMinute)
		if !ok {
			t.Fatalf("appchat/send has no rule %q", catalog.RulePushMinute)
		}
		rule.Limit = 4
		srv := newMock(t, mock.Config{}, "zhangsan", "lisi")
		c := setup(t, on(srv), wecom.WithAgentID(1000002), wecom.WithRule(catalog.AppChatSend.Path(), rule))
		ctx := context.Background()
		id, err := c.AppChats.Create(ctx, wecom.AppChatCreateRequest{Members: []string{"zhangsan", "lisi"}})
		if err != nil {
			t.Fatal(err)
		}
		msg := wecom.AppChatMessage{ChatID: id, Content: &wecom.TextMessage{Content: "n"}}
		for range 2 {
			if err := c.AppChats.Send(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
		short, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := c.AppChats.Send(short, msg); !errors.Is(err, wecom.ErrRateLimited) {
			t.Errorf("a third message = %v, want ErrRateLimited", err)
		}
		if got := srv.AppChatTally(testCorp, "zhangsan"); got.Delivered != 2 {
			t.Errorf("zhangsan: %+v, want 2 delivered", got)
		}
	})
}

// TestAppChatMemberAcrossApps: a member's 200 a minute in groups counts
// what every app of the corp sends them. Two apps sharing a limiter, each
// posting 150 messages to its own chat with the same member: the member
// receives all 300, none dropped, in a little over a minute. Without the
// rule, the mock drops some of them, though neither app alone went over.
func TestAppChatMemberAcrossApps(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		got, took := twoAppsRun(t)
		if got.Delivered != 300 || got.Dropped != 0 {
			t.Errorf("zhangsan: %+v, want 300 delivered, none dropped", got)
		}
		if took < time.Minute {
			t.Errorf("took %s, want over the minute 300 messages to one member need", took)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		got, _ := twoAppsRun(t, wecom.WithoutRule(catalog.AppChatSend.Path(), catalog.RuleChatMemberMinute))
		if got.Dropped == 0 {
			t.Errorf("zhangsan: %+v without the rule, want some dropped: the mock must count across apps", got)
		}
	})
}

// twoAppsRun has two apps of one corp, sharing a limiter, each post 150
// messages to a chat of its own with zhangsan, and returns zhangsan's
// tally and the time it took.
func twoAppsRun(t *testing.T, opts ...wecom.Option) (mock.MessageTally, time.Duration) {
	t.Helper()
	srv, err := mock.New(mock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv.AddUsers(testCorp, "zhangsan", "lisi", "wangwu")
	limiter := throttle.NewMemory()
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	for i, app := range []struct{ secret, other string }{{"secret-a", "lisi"}, {"secret-b", "wangwu"}} {
		srv.AddApp(testCorp, app.secret)
		c, err := wecom.New(testCorp, app.secret, append([]wecom.Option{wecom.WithBaseURL(testBase), wecom.WithTransport(srvTransport(srv)),
			wecom.WithAgentID(1000002 + i), wecom.WithLimiter(limiter)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		id, err := c.AppChats.Create(ctx, wecom.AppChatCreateRequest{Members: []string{"zhangsan", app.other}})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for range 150 {
				if err := c.AppChats.Send(ctx, wecom.AppChatMessage{ChatID: id, Content: &wecom.TextMessage{Content: "n"}}); err != nil {
					t.Errorf("app %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return srv.AppChatTally(testCorp, "zhangsan"), time.Since(start)
}

// TestAppChatFreshMembers: two processes of one app share a limiter; B
// adds c to chat x and fills c's minute in chat y. A's known members of x
// predate the change: with FreshMembers, A reads x again, counts c, and
// its send waits for c's minute instead of being dropped for c.
func TestAppChatFreshMembers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newMock(t, mock.Config{})
		srv.AddUsers(testCorp, "a", "b", "c", "d")
		mt := httpmock.NewMockTransport()
		srv.Register(mt, testBase)
		lim := throttle.NewMemory()
		A := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1000002), wecom.WithLimiter(lim))
		B := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1000002), wecom.WithLimiter(lim))
		ctx := context.Background()
		x, err := A.AppChats.Create(ctx, wecom.AppChatCreateRequest{Name: "x", Members: []string{"a", "b"}, ChatID: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if err := B.AppChats.Update(ctx, wecom.AppChatUpdateRequest{ChatID: x, AddMembers: []string{"c"}}); err != nil {
			t.Fatal(err)
		}
		y, err := B.AppChats.Create(ctx, wecom.AppChatCreateRequest{Name: "y", Members: []string{"c", "d"}, ChatID: "y"})
		if err != nil {
			t.Fatal(err)
		}
		for range 200 {
			if err := B.AppChats.Send(ctx, wecom.AppChatMessage{ChatID: y, Content: &wecom.TextMessage{Content: "y"}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := A.AppChats.Send(ctx, wecom.AppChatMessage{ChatID: x, FreshMembers: true, Content: &wecom.TextMessage{Content: "x"}}); err != nil {
			t.Fatal(err)
		}
		if got := srv.AppChatTally(testCorp, "c"); got != (mock.MessageTally{Delivered: 201}) {
			t.Errorf("c: %+v, want 201 delivered and none dropped", got)
		}
	})
}
