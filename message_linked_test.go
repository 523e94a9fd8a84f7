package wecom_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// linkedDoc is the text of document/path/90250's example.
const linkedDoc = "你的快递已到，请携带工卡前往邮件中心领取。\n出发前可查看<a href=\"http://work.weixin.qq.com\">邮件中心视频实况</a>，聪明避开排队。"

// TestLinkedMessageWire: a linked-corp message goes out as
// document/path/90250 shows it, and its answer's arrays come back as
// lists. Parties, tags and everyone go out, uncounted.
func TestLinkedMessageWire(t *testing.T) {
	t.Parallel()
	answer := `{"errcode":0,"errmsg":"ok","invaliduser":["userid1","CorpId1/userid1"],"invalidparty":["partyid1","LinkedId1/partyid1"],"invalidtag":["tagid1"]}`
	mt, sent := recorded(map[catalog.ID]string{catalog.LinkedMessageSend: answer})
	c := setup(t, wecom.WithTransport(mt))
	ctx := context.Background()
	res, err := c.Messages.SendLinked(ctx, wecom.LinkedMessage{ToUser: []string{"userid1", "userid2", "CorpId1/userid1", "CorpId2/userid2"},
		AgentID: 1, Content: &wecom.TextMessage{Content: linkedDoc}, Safe: true})
	want := wecom.SendResult{InvalidUsers: []string{"userid1", "CorpId1/userid1"}, InvalidParties: []string{"partyid1", "LinkedId1/partyid1"}, InvalidTags: []string{"tagid1"}}
	if err != nil || !slices.Equal(res.InvalidUsers, want.InvalidUsers) || !slices.Equal(res.InvalidParties, want.InvalidParties) || !slices.Equal(res.InvalidTags, want.InvalidTags) {
		t.Fatalf("SendLinked = %+v, %v; want %+v", res, err, want)
	}
	// Parties, tags and everyone go out uncounted.
	if _, err := c.Messages.SendLinked(ctx, wecom.LinkedMessage{ToUser: []string{"userid1"}, ToParty: []string{"partyid1", "LinkedId1/partyid1"},
		ToTag: []string{"tagid1"}, ToAll: true, AgentID: 1, Content: &wecom.MarkdownMessage{Content: "**x**"}}); err != nil {
		t.Fatal(err)
	}
	got := sent()
	if len(got) != 2 {
		t.Fatalf("%d requests, want 2", len(got))
	}
	wantJSON(t, got[0].body, `{"touser":["userid1","userid2","CorpId1/userid1","CorpId2/userid2"],"msgtype":"text","agentid":1,"text":{"content":`+mustJSON(t, linkedDoc)+`},"safe":1}`)
	wantJSON(t, got[1].body, `{"touser":["userid1"],"toparty":["partyid1","LinkedId1/partyid1"],"totag":["tagid1"],"toall":1,"msgtype":"markdown","agentid":1,"markdown":{"content":"**x**"}}`)
}

// TestLinkedMessageInvalid: messages WeCom would refuse are refused before
// anything is sent.
func TestLinkedMessageInvalid(t *testing.T) {
	t.Parallel()
	mt, sent := recorded(map[catalog.ID]string{catalog.LinkedMessageSend: `{"errcode":0,"errmsg":"ok"}`})
	c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1))
	text := &wecom.TextMessage{Content: "x"}
	for name, m := range map[string]wecom.LinkedMessage{
		"no recipient":  {Content: text},
		"1,001 members": {ToUser: manyUsers(1001), Content: text},
		"an empty id":   {ToUser: []string{"a", ""}, Content: text},
		"no content":    {ToUser: []string{"a"}},
		"an empty text": {ToUser: []string{"a"}, Content: &wecom.TextMessage{}},
	} {
		if _, err := c.Messages.SendLinked(context.Background(), m); !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if n := len(sent()); n != 0 {
		t.Errorf("%d messages sent", n)
	}
}

// TestLinkedMessageMock: the mock delivers to the members its directory
// holds, a linked corp's as corpid/userid, lists the others as invalid,
// and answers 81013 when none is valid.
func TestLinkedMessageMock(t *testing.T) {
	t.Parallel()
	srv := newMock(t, mock.Config{}, "zhangsan", "wwlinked/lisi")
	c := setup(t, on(srv), wecom.WithAgentID(1000002))
	ctx := context.Background()
	res, err := c.Messages.SendLinked(ctx, wecom.LinkedMessage{ToUser: []string{"zhangsan", "wwlinked/lisi", "wwlinked/ghost"}, Content: &wecom.TextMessage{Content: "hi"}})
	if err != nil || !slices.Equal(res.InvalidUsers, []string{"wwlinked/ghost"}) {
		t.Errorf("SendLinked = %+v, %v; want wwlinked/ghost invalid", res, err)
	}
	for _, u := range []string{"zhangsan", "wwlinked/lisi"} {
		if got := srv.MessageTally(testCorp, u); got.Delivered != 1 {
			t.Errorf("%s: %+v, want 1 delivered", u, got)
		}
	}
	_, err = c.Messages.SendLinked(ctx, wecom.LinkedMessage{ToUser: []string{"ghost"}, Content: &wecom.TextMessage{Content: "hi"}})
	wantCode(t, "to nobody known", err, 81013)
}

// TestLinkedMessagesNeverDropped: 20 app messages and 20 linked-corp
// messages to one member, more than the 30 a minute an app sends a
// member, counted together: all delivered, none dropped, in a little over
// a minute.
func TestLinkedMessagesNeverDropped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newMock(t, mock.Config{}, "zhangsan", "wwlinked/lisi")
		c := setup(t, on(srv), wecom.WithAgentID(1000002))
		ctx := context.Background()
		start := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 20 {
				if _, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"zhangsan"}, Content: &wecom.TextMessage{Content: "n"}}); err != nil {
					t.Errorf("Send: %v", err)
					return
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				if _, err := c.Messages.SendLinked(ctx, wecom.LinkedMessage{ToUser: []string{"zhangsan", "wwlinked/lisi"}, Content: &wecom.TextMessage{Content: "n"}}); err != nil {
					t.Errorf("SendLinked: %v", err)
					return
				}
			}
		})
		wg.Wait()
		for u, want := range map[string]int{"zhangsan": 40, "wwlinked/lisi": 20} {
			if got := srv.MessageTally(testCorp, u); got.Delivered != want || got.Dropped != 0 {
				t.Errorf("%s: %+v, want %d delivered, none dropped", u, got, want)
			}
		}
		if took := time.Since(start); took < time.Minute || took > 62*time.Second {
			t.Errorf("took %s, want just over the minute 40 messages to one member need", took)
		}
	})
}

// TestLinkedOwnMemberCountedOnce: a member of the client's own corp named
// as "corpid/userid" in a linked send shares the windows of the userid
// Messages.Send names: after 30 sends to zhangsan, a linked send to
// testCorp/ZhangSan cannot go within a short deadline.
func TestLinkedOwnMemberCountedOnce(t *testing.T) {
	t.Parallel()
	mt, _ := recorded(map[catalog.ID]string{
		catalog.MessageSend:       `{"errcode":0,"errmsg":"ok","msgid":"m"}`,
		catalog.LinkedMessageSend: `{"errcode":0,"errmsg":"ok"}`,
	})
	c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1))
	ctx := context.Background()
	for range 30 {
		if _, err := c.Messages.Send(ctx, wecom.Message{ToUser: []string{"zhangsan"}, Content: &wecom.TextMessage{Content: "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := c.Messages.SendLinked(short, wecom.LinkedMessage{ToUser: []string{testCorp + "/ZhangSan"}, Content: &wecom.TextMessage{Content: "x"}})
	var rl *wecom.RateLimitError
	if !errors.Is(err, wecom.ErrRateLimited) || !errors.As(err, &rl) || !slices.Equal(rl.Members, []string{testCorp + "/ZhangSan"}) {
		t.Errorf("a linked send to the same member: %v, want ErrRateLimited naming %s/ZhangSan as the send did", err, testCorp)
	}
}
