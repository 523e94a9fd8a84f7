package wecom_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
)

// sentRequest is one request a wire test's server got.
type sentRequest struct {
	method, path, query, body string
}

// recorded returns a transport that answers each path of answers with its
// body, and the requests it got but gettoken.
func recorded(answers map[catalog.ID]string) (*httpmock.MockTransport, func() []sentRequest) {
	mt := tokenTransport()
	var mu sync.Mutex
	var sent []sentRequest
	for id, answer := range answers {
		e, _ := catalog.Lookup(id.Path())
		mt.RegisterResponder(e.Method, testBase+id.Path(), func(r *http.Request) (*http.Response, error) {
			var b []byte
			if r.Body != nil {
				b, _ = io.ReadAll(r.Body)
			}
			q := r.URL.Query()
			q.Del("access_token")
			mu.Lock()
			sent = append(sent, sentRequest{r.Method, r.URL.Path, q.Encode(), string(b)})
			mu.Unlock()
			return httpmock.NewStringResponse(http.StatusOK, answer), nil
		})
	}
	return mt, func() []sentRequest {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(sent)
	}
}

// wantJSON fails unless got and want hold the same JSON value.
func wantJSON(t *testing.T, got, want string) {
	t.Helper()
	if !sameJSON(t, got, want) {
		t.Errorf("sent %s\nwant %s", got, want)
	}
}

// TestAppChatWire: create, update and get go out and come back as WeCom's
// pages show them (document/path/90245, 90246, 90247).
func TestAppChatWire(t *testing.T) {
	t.Parallel()
	mt, sent := recorded(map[catalog.ID]string{
		catalog.AppChatCreate: `{"errcode":0,"errmsg":"ok","chatid":"CHATID"}`,
		catalog.AppChatUpdate: `{"errcode":0,"errmsg":"ok"}`,
		catalog.AppChatGet:    `{"errcode":0,"errmsg":"ok","chat_info":{"chatid":"CHATID","name":"NAME","owner":"userid2","userlist":["userid1","userid2","userid3"],"chat_type":0}}`,
	})
	c := setup(t, wecom.WithTransport(mt))
	ctx := context.Background()
	id, err := c.AppChats.Create(ctx, wecom.AppChatCreateRequest{Name: "NAME", Owner: "userid1", Members: []string{"userid1", "userid2", "userid3", "USERID2"}, ChatID: "CHATID"})
	if err != nil || id != "CHATID" {
		t.Fatalf("Create = %q, %v", id, err)
	}
	err = c.AppChats.Update(ctx, wecom.AppChatUpdateRequest{ChatID: "CHATID", Name: "NAME", Owner: "userid2",
		AddMembers: []string{"userid1", "userid2", "userid3"}, RemoveMembers: []string{"userid3", "userid4"}})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	chat, err := c.AppChats.Get(ctx, "CHATID")
	want := wecom.AppChat{ChatID: "CHATID", Name: "NAME", Owner: "userid2", Members: []string{"userid1", "userid2", "userid3"}}
	if err != nil || !slices.Equal(chat.Members, want.Members) || chat.ChatID != want.ChatID || chat.Name != want.Name || chat.Owner != want.Owner || chat.ChatType != 0 {
		t.Fatalf("Get = %+v, %v; want %+v", chat, err, want)
	}
	got := sent()
	if len(got) != 3 {
		t.Fatalf("%d requests, want 3", len(got))
	}
	wantJSON(t, got[0].body, `{"name":"NAME","owner":"userid1","userlist":["userid1","userid2","userid3"],"chatid":"CHATID"}`)
	wantJSON(t, got[1].body, `{"chatid":"CHATID","name":"NAME","owner":"userid2","add_user_list":["userid1","userid2","userid3"],"del_user_list":["userid3","userid4"]}`)
	if got[2].method != http.MethodGet || got[2].query != "chatid=CHATID" {
		t.Errorf("get: %s ?%s, want GET ?chatid=CHATID", got[2].method, got[2].query)
	}
}

// TestAppChatSendWire: every message type a chat takes goes out as
// document/path/90248 shows it; the chat's members are read once, with
// appchat/get, before the first message to a chat the client does not
// know.
func TestAppChatSendWire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		content wecom.MessageContent
		safe    bool
		want    string
	}{
		{"text", &wecom.TextMessage{Content: "你的快递已到\n请携带工卡前往邮件中心领取"}, true,
			`{"chatid":"CHATID","msgtype":"text","text":{"content":"你的快递已到\n请携带工卡前往邮件中心领取"},"safe":1}`},
		{"image", &wecom.ImageMessage{MediaID: "MEDIAID"}, false, `{"chatid":"CHATID","msgtype":"image","image":{"media_id":"MEDIAID"}}`},
		{"voice", &wecom.VoiceMessage{MediaID: "MEDIA_ID"}, false, `{"chatid":"CHATID","msgtype":"voice","voice":{"media_id":"MEDIA_ID"}}`},
		{"video", &wecom.VideoMessage{MediaID: "MEDIA_ID", Title: "Title", Description: "Description"}, false,
			`{"chatid":"CHATID","msgtype":"video","video":{"media_id":"MEDIA_ID","title":"Title","description":"Description"}}`},
		{"file", &wecom.FileMessage{MediaID: "1Yv-zXfHjSjU-7LH-GwtYqDGS-zz6w22KmWAT5COgP7o"}, false,
			`{"chatid":"CHATID","msgtype":"file","file":{"media_id":"1Yv-zXfHjSjU-7LH-GwtYqDGS-zz6w22KmWAT5COgP7o"}}`},
		{"textcard", &wecom.TextCardMessage{Title: "领奖通知", Description: `<div class="gray">2016年9月26日</div>`, URL: "URL", ButtonText: "更多"}, false,
			`{"chatid":"CHATID","msgtype":"textcard","textcard":{"title":"领奖通知","description":"<div class=\"gray\">2016年9月26日</div>","url":"URL","btntxt":"更多"}}`},
		{"news", &wecom.NewsMessage{Articles: []wecom.NewsArticle{{Title: "中秋节礼品领取", Description: "今年中秋节公司有豪礼相送", URL: "URL", PicURL: "http://res.mail.qq.com/node/ww/wwopenmng/images/independent/doc/test_pic_msg1.png"}}}, false,
			`{"chatid":"CHATID","msgtype":"news","news":{"articles":[{"title":"中秋节礼品领取","description":"今年中秋节公司有豪礼相送","url":"URL","picurl":"http://res.mail.qq.com/node/ww/wwopenmng/images/independent/doc/test_pic_msg1.png"}]}}`},
		{"mpnews", &wecom.MPNewsMessage{Articles: []wecom.MPNewsArticle{{Title: "地球一小时", ThumbMediaID: "biz_get(image)", Author: "Author", ContentSourceURL: "https://work.weixin.qq.com", Content: "3月24日20:30-21:30 \n办公区将关闭照明一小时，请各部门同事相互转告", Digest: "3月24日20:30-21:30 \n办公区将关闭照明一小时"}}}, false,
			`{"chatid":"CHATID","msgtype":"mpnews","mpnews":{"articles":[{"title":"地球一小时","thumb_media_id":"biz_get(image)","author":"Author","content_source_url":"https://work.weixin.qq.com","content":"3月24日20:30-21:30 \n办公区将关闭照明一小时，请各部门同事相互转告","digest":"3月24日20:30-21:30 \n办公区将关闭照明一小时"}]}}`},
		{"markdown", &wecom.MarkdownMessage{Content: "您的会议室已经预定，稍后会同步到`邮箱`"}, false,
			`{"chatid":"CHATID","msgtype":"markdown","markdown":{"content":"您的会议室已经预定，稍后会同步到` + "`邮箱`" + `"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mt, sent := recorded(map[catalog.ID]string{
				catalog.AppChatGet:  `{"errcode":0,"errmsg":"ok","chat_info":{"chatid":"CHATID","name":"NAME","owner":"userid2","userlist":["userid1","userid2","userid3"],"chat_type":0}}`,
				catalog.AppChatSend: `{"errcode":0,"errmsg":"ok"}`,
			})
			c := setup(t, wecom.WithTransport(mt))
			for range 2 {
				if err := c.AppChats.Send(context.Background(), wecom.AppChatMessage{ChatID: "CHATID", Content: tc.content, Safe: tc.safe}); err != nil {
					t.Fatal(err)
				}
			}
			got := sent()
			if len(got) != 3 || got[0].path != catalog.AppChatGet.Path() || got[1].path != catalog.AppChatSend.Path() || got[2].path != catalog.AppChatSend.Path() {
				t.Fatalf("requests %+v, want one appchat/get and two appchat/send", got)
			}
			wantJSON(t, got[1].body, tc.want)
		})
	}
}

// TestAppChatInvalid: requests WeCom would refuse are refused before
// anything is sent.
func TestAppChatInvalid(t *testing.T) {
	t.Parallel()
	mt, sent := recorded(map[catalog.ID]string{
		catalog.AppChatCreate: `{"errcode":0,"errmsg":"ok","chatid":"x"}`,
		catalog.AppChatUpdate: `{"errcode":0,"errmsg":"ok"}`,
		catalog.AppChatGet:    `{"errcode":0,"errmsg":"ok"}`,
		catalog.AppChatSend:   `{"errcode":0,"errmsg":"ok"}`,
	})
	c := setup(t, wecom.WithTransport(mt))
	ctx := context.Background()
	two := []string{"a", "b"}
	text := &wecom.TextMessage{Content: "x"}
	for name, r := range map[string]wecom.AppChatCreateRequest{
		"one member":            {Members: []string{"a", "A"}},
		"2,001 members":         {Members: manyUsers(2001)},
		"an empty member":       {Members: []string{"a", ""}},
		"an owner not a member": {Members: two, Owner: "c"},
		"a chatid with a dash":  {Members: two, ChatID: "a-b"},
		"a chatid of 33":        {Members: two, ChatID: strings.Repeat("a", 33)},
	} {
		if _, err := c.AppChats.Create(ctx, r); !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("create, %s: %v, want wecom.ErrInvalidRequest", name, err)
		}
	}
	for name, r := range map[string]wecom.AppChatUpdateRequest{
		"no chatid":       {Name: "n"},
		"nothing":         {ChatID: "c"},
		"an empty member": {ChatID: "c", AddMembers: []string{""}},
	} {
		if err := c.AppChats.Update(ctx, r); !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("update, %s: %v, want wecom.ErrInvalidRequest", name, err)
		}
	}
	if _, err := c.AppChats.Get(ctx, ""); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("get without chatid: %v, want wecom.ErrInvalidRequest", err)
	}
	for name, m := range map[string]wecom.AppChatMessage{
		"no chatid":             {Content: text},
		"no content":            {ChatID: "c"},
		"a mini program notice": {ChatID: "c", Content: &wecom.MiniProgramNotice{AppID: "wx", Page: "p", Title: "会议室预订成功"}},
		"an empty text":         {ChatID: "c", Content: &wecom.TextMessage{}},
	} {
		if err := c.AppChats.Send(ctx, m); !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("send, %s: %v, want wecom.ErrInvalidRequest", name, err)
		}
	}
	if got := sent(); len(got) != 0 {
		t.Errorf("%d requests sent: %+v", len(got), got)
	}
}

func manyUsers(n int) []string {
	us := make([]string, n)
	for i := range us {
		us[i] = "u" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
	}
	return us
}

// TestDoRefusesAppChatSend: Do cannot know a chat's members, which
// appchat/send's limits count: it refuses the call, naming the method that
// can, and sends nothing.
func TestDoRefusesAppChatSend(t *testing.T) {
	t.Parallel()
	mt, sent := recorded(map[catalog.ID]string{catalog.AppChatSend: `{"errcode":0,"errmsg":"ok"}`})
	c := setup(t, wecom.WithTransport(mt))
	err := c.Do(context.Background(), http.MethodPost, catalog.AppChatSend.Path(), nil,
		map[string]any{"chatid": "CHATID", "msgtype": "text", "text": map[string]string{"content": "hi"}}, nil)
	if !errors.Is(err, wecom.ErrInvalidRequest) || !strings.Contains(err.Error(), "AppChats.Send") {
		t.Errorf("Do = %v, want ErrInvalidRequest naming AppChats.Send", err)
	}
	if got := sent(); len(got) != 0 {
		t.Errorf("%d requests sent", len(got))
	}
}
