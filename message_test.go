package wecom_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// recordBodies returns a transport that answers message/send with answer,
// and the bodies it got.
func recordBodies(answer string) (*httpmock.MockTransport, func() []string) {
	mt := tokenTransport()
	var mu sync.Mutex
	var bodies []string
	mt.RegisterResponder(http.MethodPost, testBase+catalog.MessageSend.Path(), func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		return httpmock.NewStringResponse(http.StatusOK, answer), nil
	})
	return mt, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(bodies)
	}
}

// TestMessageWire: every message type goes out as WeCom documents it
// (document/path/90236), with the recipients, the agent and the options.
func TestMessageWire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		m    wecom.Message
		want string
	}{
		{"text", wecom.Message{ToUser: []string{"UserID1", "UserID2", "userid1"}, Content: &wecom.TextMessage{Content: "你的快递已到"}, Safe: true, EnableIDTrans: true},
			`{"touser":"UserID1|UserID2","msgtype":"text","agentid":1000002,"text":{"content":"你的快递已到"},"safe":1,"enable_id_trans":1}`},
		{"image", wecom.Message{ToUser: []string{"u"}, AgentID: 7, Content: &wecom.ImageMessage{MediaID: "MEDIA_ID"}},
			`{"touser":"u","msgtype":"image","agentid":7,"image":{"media_id":"MEDIA_ID"}}`},
		{"voice", wecom.Message{ToUser: []string{"u"}, Content: &wecom.VoiceMessage{MediaID: "MEDIA_ID"}},
			`{"touser":"u","msgtype":"voice","agentid":1000002,"voice":{"media_id":"MEDIA_ID"}}`},
		{"video", wecom.Message{ToUser: []string{"u"}, Content: &wecom.VideoMessage{MediaID: "MEDIA_ID", Title: "Title", Description: "Description"}},
			`{"touser":"u","msgtype":"video","agentid":1000002,"video":{"media_id":"MEDIA_ID","title":"Title","description":"Description"}}`},
		{"file", wecom.Message{ToUser: []string{"u"}, Content: &wecom.FileMessage{MediaID: "1Yv-zXfHjSjU-7LH-GwtYqDGS-zz6w22KmWAT5COgP7o"}},
			`{"touser":"u","msgtype":"file","agentid":1000002,"file":{"media_id":"1Yv-zXfHjSjU-7LH-GwtYqDGS-zz6w22KmWAT5COgP7o"}}`},
		{"textcard", wecom.Message{ToUser: []string{"u"}, Content: &wecom.TextCardMessage{Title: "领奖通知", Description: `<div class="gray">2016年9月26日</div>`, URL: "https://work.weixin.qq.com", ButtonText: "更多"}},
			`{"touser":"u","msgtype":"textcard","agentid":1000002,"textcard":{"title":"领奖通知","description":"<div class=\"gray\">2016年9月26日</div>","url":"https://work.weixin.qq.com","btntxt":"更多"}}`},
		{"news", wecom.Message{ToUser: []string{"u"}, Content: &wecom.NewsMessage{Articles: []wecom.NewsArticle{{Title: "中秋节礼品领取", Description: "今年中秋节公司有豪礼相送", URL: "https://work.weixin.qq.com", PicURL: "https://res.mail.qq.com/node/ww/wwopenmng/images/independent/doc/test_pic_msg1.png"}}}},
			`{"touser":"u","msgtype":"news","agentid":1000002,"news":{"articles":[{"title":"中秋节礼品领取","description":"今年中秋节公司有豪礼相送","url":"https://work.weixin.qq.com","picurl":"https://res.mail.qq.com/node/ww/wwopenmng/images/independent/doc/test_pic_msg1.png"}]}}`},
		{"mpnews", wecom.Message{ToUser: []string{"u"}, Content: &wecom.MPNewsMessage{Articles: []wecom.MPNewsArticle{{Title: "Title", ThumbMediaID: "MEDIA_ID", Author: "Author", ContentSourceURL: "URL", Content: "Content", Digest: "Digest description"}}}},
			`{"touser":"u","msgtype":"mpnews","agentid":1000002,"mpnews":{"articles":[{"title":"Title","thumb_media_id":"MEDIA_ID","author":"Author","content_source_url":"URL","content":"Content","digest":"Digest description"}]}}`},
		{"markdown", wecom.Message{ToUser: []string{"u"}, Content: &wecom.MarkdownMessage{Content: "您的会议室已经预定\n>**事项详情**"}},
			`{"touser":"u","msgtype":"markdown","agentid":1000002,"markdown":{"content":"您的会议室已经预定\n>**事项详情**"}}`},
		{"miniprogram_notice", wecom.Message{ToUser: []string{"u"}, Content: &wecom.MiniProgramNotice{AppID: "wx123123123123123", Page: "pages/index?userid=zhangsan&orderid=123123123", Title: "会议室预订成功通知", Description: "4月27日 16:16", EmphasisFirstItem: true, ContentItems: []wecom.NoticeItem{{Key: "会议室", Value: "402"}}}},
			`{"touser":"u","msgtype":"miniprogram_notice","agentid":1000002,"miniprogram_notice":{"appid":"wx123123123123123","page":"pages/index?userid=zhangsan&orderid=123123123","title":"会议室预订成功通知","description":"4月27日 16:16","emphasis_first_item":true,"content_item":[{"key":"会议室","value":"402"}]}}`},
		{"duplicate check", wecom.Message{ToUser: []string{"u"}, Content: &wecom.TextMessage{Content: "x"}, DuplicateCheck: true, DuplicateInterval: 1800 * time.Second},
			`{"touser":"u","msgtype":"text","agentid":1000002,"text":{"content":"x"},"enable_duplicate_check":1,"duplicate_check_interval":1800}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mt, bodies := recordBodies(`{"errcode":0,"errmsg":"ok","msgid":"m1"}`)
			c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1000002))
			if _, err := c.Messages.Send(context.Background(), tc.m); err != nil {
				t.Fatal(err)
			}
			got := bodies()
			if len(got) != 1 {
				t.Fatalf("%d requests", len(got))
			}
			var g, w any
			_ = json.Unmarshal([]byte(got[0]), &g)
			_ = json.Unmarshal([]byte(tc.want), &w)
			if gj, wj := mustJSON(t, g), mustJSON(t, w); gj != wj {
				t.Errorf("sent %s\nwant %s", gj, wj)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMessageResult: the invalid lists come back as lists, from WeCom's
// "a|b" strings or from arrays (a linked corp's answer), numbers included.
func TestMessageResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		answer string
		want   wecom.SendResult
	}{
		{`{"errcode":0,"errmsg":"ok","invaliduser":"userid1|userid2","invalidparty":"partyid1|partyid2","invalidtag":"tagid1|tagid2","unlicenseduser":"userid3|userid4","msgid":"xx","response_code":"xyzxyz"}`,
			wecom.SendResult{MsgID: "xx", ResponseCode: "xyzxyz", InvalidUsers: []string{"userid1", "userid2"}, InvalidParties: []string{"partyid1", "partyid2"},
				InvalidTags: []string{"tagid1", "tagid2"}, UnlicensedUsers: []string{"userid3", "userid4"}}},
		{`{"errcode":0,"errmsg":"ok","invaliduser":["u1","u2"],"invalidparty":[2,3],"invalidtag":"","msgid":"m"}`,
			wecom.SendResult{MsgID: "m", InvalidUsers: []string{"u1", "u2"}, InvalidParties: []string{"2", "3"}}},
		{`{"errcode":0,"errmsg":"ok","invaliduser":null,"msgid":"m"}`, wecom.SendResult{MsgID: "m"}},
	} {
		mt, _ := recordBodies(tc.answer)
		c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1000002))
		got, err := c.Messages.Send(context.Background(), wecom.Message{ToUser: []string{"u"}, Content: &wecom.TextMessage{Content: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range []*[]string{&got.InvalidUsers, &got.InvalidParties, &got.InvalidTags, &got.UnlicensedUsers} {
			if len(*l) == 0 {
				*l = nil
			}
		}
		if mustJSON(t, got) != mustJSON(t, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.answer, got, tc.want)
		}
	}
}

// TestMessageInvalid: what WeCom would refuse, or what the SDK cannot
// count per member, is refused before anything is sent.
func TestMessageInvalid(t *testing.T) {
	t.Parallel()
	mt, bodies := recordBodies(`{"errcode":0,"errmsg":"ok"}`)
	c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1000002))
	text := &wecom.TextMessage{Content: "x"}
	for name, m := range map[string]wecom.Message{
		"no recipient":        {Content: text},
		"@all":                {ToUser: []string{"@all"}, Content: text},
		"ToAll and users":     {ToAll: true, ToUser: []string{"u"}, Content: text},
		"party 0":             {ToParty: []int{0}, Content: text},
		"a bar in a userid":   {ToUser: []string{"a|b"}, Content: text},
		"1,001 members":       {ToUser: manyUsers(1001), Content: text},
		"no content":          {ToUser: []string{"u"}},
		"empty text":          {ToUser: []string{"u"}, Content: &wecom.TextMessage{}},
		"text over 2,048":     {ToUser: []string{"u"}, Content: &wecom.TextMessage{Content: strings.Repeat("x", 2049)}},
		"a card without url":  {ToUser: []string{"u"}, Content: &wecom.TextCardMessage{Title: "t", Description: "d"}},
		"nine articles":       {ToUser: []string{"u"}, Content: &wecom.NewsMessage{Articles: slices.Repeat([]wecom.NewsArticle{{Title: "t", URL: "u"}}, 9)}},
		"a notice title of 3": {ToUser: []string{"u"}, Content: &wecom.MiniProgramNotice{AppID: "wx", Title: "三个字"}},
		"a 5-hour check":      {ToUser: []string{"u"}, Content: text, DuplicateCheck: true, DuplicateInterval: 5 * time.Hour},
	} {
		_, err := c.Messages.Send(context.Background(), m)
		if !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%s: %v, want wecom.ErrInvalidRequest", name, err)
		}
	}
	noAgent := setup(t, wecom.WithTransport(tokenTransport()))
	if _, err := noAgent.Messages.Send(context.Background(), wecom.Message{ToUser: []string{"u"}, Content: text}); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("no agent id: %v, want wecom.ErrInvalidRequest", err)
	}
	if n := len(bodies()); n != 0 {
		t.Errorf("%d messages sent", n)
	}
}

// notifyRun sends each member perMember messages through a client of a
// fresh mock, in a synctest bubble, a goroutine per member and one send to
// all of them in between, and returns each member's tally and the virtual
// time it took.
func notifyRun(t *testing.T, members []string, perMember int, opts ...wecom.Option) (map[string]mock.MessageTally, time.Duration) {
	t.Helper()
	srv := newMock(t, mock.Config{})
	srv.AddUsers(testCorp, members...)
	mt := httpmock.NewMockTransport()
	srv.Register(mt, testBase)
	c := setup(t, append([]wecom.Option{wecom.WithTransport(mt), wecom.WithAgentID(1000002)}, opts...)...)
	start := time.Now()
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Go(func() {
			for i := range perMember - 1 {
				if _, err := c.Messages.Send(context.Background(), wecom.Message{ToUser: []string{m}, Content: &wecom.TextMessage{Content: "n" + string(rune('a'+i%26))}}); err != nil {
					t.Errorf("to %s: %v", m, err)
					return
				}
			}
		})
	}
	if _, err := c.Messages.Send(context.Background(), wecom.Message{ToUser: members, Content: &wecom.TextMessage{Content: "to all"}}); err != nil {
		t.Errorf("to all: %v", err)
	}
	wg.Wait()
	tallies := map[string]mock.MessageTally{}
	for _, m := range members {
		tallies[m] = srv.MessageTally(testCorp, m)
	}
	return tallies, time.Since(start)
}

// TestMessagesNeverDropped: 40 messages to each of 3 members, more than a
// minute allows, all delivered, none dropped, in a little over the minute
// the windows require; with the per-minute rule taken away, the mock drops
// some, as WeCom would.
func TestMessagesNeverDropped(t *testing.T) {
	t.Parallel()
	members := []string{"zhangsan", "lisi", "wangwu"}
	synctest.Test(t, func(t *testing.T) {
		tallies, took := notifyRun(t, members, 40)
		for m, tl := range tallies {
			if tl.Delivered != 40 || tl.Dropped != 0 {
				t.Errorf("%s: %+v, want 40 delivered and none dropped", m, tl)
			}
		}
		if took < time.Minute || took > 62*time.Second {
			t.Errorf("took %s, want just over the minute 40 messages a member need", took)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		tallies, _ := notifyRun(t, members, 40, wecom.WithoutRule(catalog.MessageSend.Path(), catalog.RuleMemberMinute))
		dropped := 0
		for _, tl := range tallies {
			dropped += tl.Dropped
		}
		if dropped == 0 {
			t.Error("without the per-minute rule nothing was dropped: the test cannot see a drop")
		}
	})
}

// loseAnswers passes requests on to next, but loses the answer of the
// first n calls to path after next has done them: WeCom did the call, the
// client never hears so.
type loseAnswers struct {
	next http.RoundTripper
	path string
	// late: the answer comes after the attempt timeout, instead of the
	// connection breaking.
	late bool
	mu   sync.Mutex
	n    int
}

func (l *loseAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	l.mu.Lock()
	lose := err == nil && r.URL.Path == l.path && l.n > 0
	if lose {
		l.n--
	}
	l.mu.Unlock()
	if !lose {
		return resp, err
	}
	resp.Body.Close()
	if l.late {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return nil, errors.New("connection reset by peer")
}

// TestMessageAnswerLost: a send WeCom did whose answer was lost (the
// connection broke, or WeCom answered -1 after doing it) is repeated only
// under WeCom's duplicate check, which then delivers it once; without the
// check it is not repeated, and its error says it may have been delivered.
func TestMessageAnswerLost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		dedupe    bool
		busy      bool // WeCom answers -1 instead of the answer being lost
		wantErr   bool
		wantTally mock.MessageTally
		late      bool // the answer comes after the attempt timeout
	}{
		{"answer after the timeout, duplicate check", true, false, false, mock.MessageTally{Delivered: 1, Deduplicated: 1}, true},
		{"answer after the timeout, no check", false, false, true, mock.MessageTally{Delivered: 1}, true},
		{"connection lost, duplicate check", true, false, false, mock.MessageTally{Delivered: 1, Deduplicated: 1}, false},
		{"connection lost, no check", false, false, true, mock.MessageTally{Delivered: 1}, false},
		{"-1, duplicate check", true, true, false, mock.MessageTally{Delivered: 1}, false}, // the scripted -1 did nothing; the retry delivered it
		{"-1, no check", false, true, true, mock.MessageTally{Delivered: 0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newMock(t, mock.Config{})
			srv.AddUsers(testCorp, "zhangsan")
			lost := &loseAnswers{next: srvTransport(srv), path: catalog.MessageSend.Path(), n: 1, late: tt.late}
			if tt.busy {
				lost.n = 0
				if err := srv.AddScript(mock.Script{Path: catalog.MessageSend.Path(), ErrCode: -1, ErrMsg: "system error"}); err != nil {
					t.Fatal(err)
				}
			}
			c := setup(t, wecom.WithTransport(lost), wecom.WithAgentID(1000002), fastRetries(), wecom.WithAttemptTimeout(100*time.Millisecond))
			_, err := c.Messages.Send(context.Background(), wecom.Message{ToUser: []string{"zhangsan"}, DuplicateCheck: tt.dedupe,
				Content: &wecom.TextMessage{Content: "the build is green"}})
			if tt.wantErr {
				if !errors.Is(err, wecom.ErrMaybeDone) || !strings.Contains(err.Error(), "not repeated") {
					t.Errorf("err = %v, want ErrMaybeDone saying it was not repeated", err)
				}
			} else if err != nil {
				t.Errorf("err = %v, want the retry to succeed", err)
			}
			if got := srv.MessageTally(testCorp, "zhangsan"); got != tt.wantTally {
				t.Errorf("tally %+v, want %+v", got, tt.wantTally)
			}
		})
	}
}

// TestRefusedMessageRetried: a send that never left (its connection was
// refused) is safe to repeat and is repeated, without a duplicate check.
func TestRefusedMessageRetried(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	base := started(t, srv)
	srv.AddUsers(testCorp, "zhangsan")
	var dials atomic.Int32
	var d net.Dialer
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) == 2 { // gettoken, then the first send
			return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connection refused")}
		}
		return d.DialContext(ctx, network, addr)
	}}
	c := setup(t, wecom.WithBaseURL(base), wecom.WithTransport(tr), wecom.WithAgentID(1000002), fastRetries())
	if _, err := c.Messages.Send(context.Background(), wecom.Message{ToUser: []string{"zhangsan"}, Content: &wecom.TextMessage{Content: "hello"}}); err != nil {
		t.Fatalf("err = %v, want the refused send repeated", err)
	}
	if got := srv.MessageTally(testCorp, "zhangsan"); got != (mock.MessageTally{Delivered: 1}) || dials.Load() != 3 {
		t.Errorf("tally %+v after %d dials, want one delivered after 3 dials", got, dials.Load())
	}
}

// TestMessageRecipients: members WeCom does not know come back in
// InvalidUsers while the others get the message; a send to none it knows
// fails with 81013.
func TestMessageRecipients(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv), wecom.WithAgentID(1000002))
	srv.AddUsers(testCorp, "zhangsan")
	ctx := context.Background()
	res, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"zhangsan", "ghost"}, Content: &wecom.TextMessage{Content: "hi"}})
	if err != nil || !slices.Equal(res.InvalidUsers, []string{"ghost"}) || res.MsgID == "" {
		t.Errorf("Send = %+v, %v; want ghost invalid and a msgid", res, err)
	}
	if got := srv.MessageTally(testCorp, "zhangsan"); got.Delivered != 1 {
		t.Errorf("zhangsan: %+v, want one delivered", got)
	}
	if _, err := c.Messages.Send(ctx, wecom.Message{ToAll: true, Content: &wecom.TextMessage{Content: "to everyone"}}); err != nil {
		t.Errorf("to @all: %v", err)
	}
	if got := srv.MessageTally(testCorp, "zhangsan"); got.Delivered != 2 {
		t.Errorf("zhangsan after a message to @all: %+v, want two delivered", got)
	}
	_, err = c.Messages.Send(ctx, wecom.Message{ToUser: []string{"ghost"}, Content: &wecom.TextMessage{Content: "hi"}})
	var ae *wecom.APIError
	if !errors.As(err, &ae) || ae.Code != 81013 {
		t.Errorf("to nobody known: %v, want errcode 81013", err)
	}
}

// TestMessageSendReady: with one member's minute full, SendReady sends to
// the others at once and hands that member back, nothing dropped; with
// none ready, nothing is sent.
func TestMessageSendReady(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv), wecom.WithAgentID(1000002))
	srv.AddUsers(testCorp, "zhangsan", "lisi", "wangwu")
	ctx := context.Background()
	text := &wecom.TextMessage{Content: "hi"}
	for range 30 {
		if _, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"zhangsan"}, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	res, d, err := c.Messages.SendReady(ctx, wecom.Message{ToUser: []string{"LiSi", "ZhangSan", "wangwu"}, Content: text})
	if err != nil || res.MsgID == "" || !slices.Equal(d.Members, []string{"ZhangSan"}) || d.RetryAfter <= 0 {
		t.Fatalf("SendReady = %+v, %+v, %v; want sent, ZhangSan deferred", res, d, err)
	}
	res, d, err = c.Messages.SendReady(ctx, wecom.Message{ToUser: []string{"zhangsan"}, Content: text})
	if err != nil || res.MsgID != "" || !slices.Equal(d.Members, []string{"zhangsan"}) {
		t.Errorf("SendReady to a full member = %+v, %+v, %v; want nothing sent", res, d, err)
	}
	want := map[string]mock.MessageTally{"zhangsan": {Delivered: 30}, "lisi": {Delivered: 1}, "wangwu": {Delivered: 1}}
	for m, w := range want {
		if got := srv.MessageTally(testCorp, m); got != w {
			t.Errorf("%s: %+v, want %+v", m, got, w)
		}
	}
	if _, _, err := c.Messages.SendReady(ctx, wecom.Message{ToParty: []int{2}, Content: text}); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("SendReady to a party: %v, want ErrInvalidRequest", err)
	}
}

// TestMessageUncounted: a message to parties, tags or everyone goes out as
// WeCom documents it, and the observer is told which recipients no limit
// counted.
func TestMessageUncounted(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var uncounted [][]string
	obs := wecom.WithObserver(func(_ context.Context, a wecom.Attempt) {
		if a.Path == catalog.MessageSend.Path() {
			mu.Lock()
			uncounted = append(uncounted, a.Uncounted)
			mu.Unlock()
		}
	})
	mt, bodies := recordBodies(`{"errcode":0,"errmsg":"ok","msgid":"m"}`)
	c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1000002), obs)
	text := &wecom.TextMessage{Content: "x"}
	ctx := context.Background()
	for _, m := range []wecom.Message{
		{ToUser: []string{"zhangsan"}, ToParty: []int{2, 3}, ToTag: []int{4}, Content: text},
		{ToAll: true, Content: text},
	} {
		if _, err := c.Messages.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		`{"agentid":1000002,"msgtype":"text","text":{"content":"x"},"toparty":"2|3","totag":"4","touser":"zhangsan"}`,
		`{"agentid":1000002,"msgtype":"text","text":{"content":"x"},"touser":"@all"}`,
	}
	if got := bodies(); !slices.Equal(got, want) {
		t.Errorf("bodies:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantU := [][]string{{"toparty", "totag"}, {"@all"}}
	mu.Lock()
	defer mu.Unlock()
	if !slices.EqualFunc(uncounted, wantU, slices.Equal) {
		t.Errorf("observer saw uncounted %q, want %q", uncounted, wantU)
	}
}

// TestMessageQuota: with the daily quota declared, a message counts once
// per member it names, and the send that would go over is refused until
// the next day, unsent.
func TestMessageQuota(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv), wecom.WithAgentID(1000002), wecom.WithRule(catalog.MessageSend.Path(), catalog.MessageQuota(5)))
	srv.AddUsers(testCorp, "a", "b", "c")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	text := &wecom.TextMessage{Content: "x"}
	if _, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"a", "b", "c"}, Content: text}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"a", "b", "c"}, Content: text}); !errors.Is(err, wecom.ErrRateLimited) {
		t.Errorf("6 recipients over a quota of 5: %v, want ErrRateLimited", err)
	}
	if _, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"a", "b"}, Content: text}); err != nil {
		t.Errorf("5 recipients within the quota: %v", err)
	}
	if got := srv.MessageTally(testCorp, "c"); got.Delivered != 1 {
		t.Errorf("c: %+v, want the refused send unsent", got)
	}
}

// TestMessageThousandDistinct: the cap of 1,000 members counts distinct
// userids (as WeCom compares them, without case): 1,000 members and the
// first named again in upper case go out as 1,000.
func TestMessageThousandDistinct(t *testing.T) {
	t.Parallel()
	mt, bodies := recordBodies(`{"errcode":0,"errmsg":"ok","msgid":"m"}`)
	c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1000002))
	users := append(manyUsers(1000), strings.ToUpper(manyUsers(1)[0]))
	if _, err := c.Messages.Send(context.Background(), wecom.Message{ToUser: users, Content: &wecom.TextMessage{Content: "x"}}); err != nil {
		t.Fatal(err)
	}
	var sent struct{ ToUser string }
	if err := json.Unmarshal([]byte(bodies()[0]), &sent); err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(sent.ToUser, "|")); n != 1000 {
		t.Errorf("%d members sent, want 1000", n)
	}
}

// TestMessageRefusalNamesMembersAsGiven: a refusal names the members
// without room as the message named them, not as the limiter counts them.
func TestMessageRefusalNamesMembersAsGiven(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{})
	c := setup(t, on(srv), wecom.WithAgentID(1000002))
	srv.AddUsers(testCorp, "zhangsan", "lisi")
	ctx := context.Background()
	for range 30 {
		if _, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"zhangsan"}, Content: &wecom.TextMessage{Content: "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := c.Messages.Send(short, wecom.Message{ToUser: []string{"lisi", "ZhangSan"}, Content: &wecom.TextMessage{Content: "x"}})
	var rl *wecom.RateLimitError
	if !errors.As(err, &rl) || !slices.Equal(rl.Members, []string{"ZhangSan"}) {
		t.Errorf("err = %v, want a *RateLimitError naming ZhangSan", err)
	}
}
