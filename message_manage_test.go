package wecom_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// answerCalls returns a transport whose calls to id are answered with
// answers in turn, and the bodies they carried.
func answerCalls(id catalog.ID, answers ...string) (*httpmock.MockTransport, *sent) {
	mt := tokenTransport()
	s := &sent{}
	mt.RegisterResponder(http.MethodPost, testBase+id.Path(), s.responder(answers...))
	return mt, s
}

// bodiesOf returns the bodies s received.
func bodiesOf(s *sent) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bodies)
}

// TestMessageManageWire: recall, update_template_card and get_statistics
// send what WeCom documents (document/path/94867, 94888, 92369) and read
// its answers.
func TestMessageManageWire(t *testing.T) {
	t.Parallel()
	t.Run("recall", func(t *testing.T) {
		t.Parallel()
		mt, s := answerCalls(catalog.MessageRecall, `{"errcode":0,"errmsg":"ok"}`)
		c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1))
		if err := c.Messages.Recall(context.Background(), "vcT8gGc-7dFb4bxT35ONjBDz901sLlXPZw1DAMC_Gc26qRpK-AK5sTJkkb0128t"); err != nil {
			t.Fatal(err)
		}
		if got := bodiesOf(s); len(got) != 1 || !sameJSON(t, got[0], `{"msgid":"vcT8gGc-7dFb4bxT35ONjBDz901sLlXPZw1DAMC_Gc26qRpK-AK5sTJkkb0128t"}`) {
			t.Errorf("sent %s", got)
		}
	})
	for _, tc := range []struct {
		name, answer string
		req          wecom.UpdateTemplateCardRequest
		want         string
		invalid      []string
	}{
		{"button", `{"errcode":0,"errmsg":"ok","invaliduser":["userid1"]}`,
			wecom.UpdateTemplateCardRequest{ResponseCode: "response_code", Users: []string{"userid1", "userid2"}, Parties: []int{2, 3}, Tags: []int{44, 55}, ReplaceButton: "replace_name"},
			`{"userids":["userid1","userid2"],"partyids":[2,3],"tagids":[44,55],"agentid":1,"response_code":"response_code","button":{"replace_name":"replace_name"}}`,
			[]string{"userid1"}},
		{"card to all", `{"errcode":0,"errmsg":"ok","invaliduser":"a|b"}`,
			wecom.UpdateTemplateCardRequest{ResponseCode: "response_code", AgentID: 7, All: true, Card: docCards()[3].card},
			`{"atall":1,"agentid":7,"response_code":"response_code","template_card":` + docVoteInteraction + `}`,
			[]string{"a", "b"}},
	} {
		t.Run("update "+tc.name, func(t *testing.T) {
			t.Parallel()
			mt, s := answerCalls(catalog.MessageUpdateCard, tc.answer)
			c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1))
			res, err := c.Messages.UpdateTemplateCard(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.InvalidUsers, tc.invalid) {
				t.Errorf("invalid users %q, want %q", res.InvalidUsers, tc.invalid)
			}
			if got := bodiesOf(s); len(got) != 1 || !sameJSON(t, got[0], tc.want) {
				t.Errorf("sent %s\nwant %s", got, tc.want)
			}
		})
	}
	t.Run("statistics", func(t *testing.T) {
		t.Parallel()
		mt, s := answerCalls(catalog.MessageStatistics, `{"errcode":0,"errmsg":"ok","statistics":[{"agentid":1000002,"app_name":"应用1","count":101}]}`)
		c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1))
		got, err := c.Messages.Statistics(context.Background(), wecom.StatisticsYesterday)
		if err != nil {
			t.Fatal(err)
		}
		if want := []wecom.AppStatistic{{AgentID: 1000002, AppName: "应用1", Count: 101}}; !slices.Equal(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
		if b := bodiesOf(s); len(b) != 1 || !sameJSON(t, b[0], `{"time_type":1}`) {
			t.Errorf("sent %s", b)
		}
	})
}

// TestMessageManageInvalid: what WeCom would refuse is refused before
// anything is sent.
func TestMessageManageInvalid(t *testing.T) {
	t.Parallel()
	mt, s := answerCalls(catalog.MessageUpdateCard, `{"errcode":0,"errmsg":"ok"}`)
	c := setup(t, wecom.WithTransport(mt), wecom.WithAgentID(1))
	ok := wecom.UpdateTemplateCardRequest{ResponseCode: "rc", Users: []string{"u"}, ReplaceButton: "done"}
	with := func(change func(*wecom.UpdateTemplateCardRequest)) wecom.UpdateTemplateCardRequest {
		r := ok
		change(&r)
		return r
	}
	for name, req := range map[string]wecom.UpdateTemplateCardRequest{
		"no response code":        with(func(r *wecom.UpdateTemplateCardRequest) { r.ResponseCode = "" }),
		"no recipient":            with(func(r *wecom.UpdateTemplateCardRequest) { r.Users = nil }),
		"1,001 users":             with(func(r *wecom.UpdateTemplateCardRequest) { r.Users = slices.Repeat([]string{"u"}, 1001) }),
		"101 parties":             with(func(r *wecom.UpdateTemplateCardRequest) { r.Parties = make([]int, 101) }),
		"neither button nor card": with(func(r *wecom.UpdateTemplateCardRequest) { r.ReplaceButton = "" }),
		"both button and card":    with(func(r *wecom.UpdateTemplateCardRequest) { r.Card = docCards()[0].card }),
		"an invalid card": with(func(r *wecom.UpdateTemplateCardRequest) {
			r.ReplaceButton, r.Card = "", &wecom.TemplateCardMessage{CardType: wecom.CardVoteInteraction}
		}),
	} {
		if _, err := c.Messages.UpdateTemplateCard(context.Background(), req); !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%s: %v, want wecom.ErrInvalidRequest", name, err)
		}
	}
	if err := c.Messages.Recall(context.Background(), ""); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("recall of no msgid: %v, want wecom.ErrInvalidRequest", err)
	}
	if _, err := c.Messages.Statistics(context.Background(), 2); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("statistics of day 2: %v, want wecom.ErrInvalidRequest", err)
	}
	noAgent := setup(t, wecom.WithTransport(tokenTransport()))
	if _, err := noAgent.Messages.UpdateTemplateCard(context.Background(), ok); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("no agent id: %v, want wecom.ErrInvalidRequest", err)
	}
	if n := len(bodiesOf(s)); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// apiCode returns the code of err's *wecom.APIError, or 0.
func apiCode(err error) int {
	var ae *wecom.APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return 0
}

// sendBoth sends content to zhangsan and lisi.
func sendBoth(t *testing.T, c *wecom.Client, content wecom.MessageContent) wecom.SendResult {
	t.Helper()
	res, err := c.Messages.Send(context.Background(), wecom.Message{ToUser: []string{"zhangsan", "lisi"}, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// window checks, in a synctest bubble, that what issue returns can be
// used until span after it was issued, and is refused with code from then
// on.
func window(t *testing.T, span time.Duration, issue func() string, use func(string) error, code int) {
	t.Helper()
	late, inTime := issue(), issue()
	time.Sleep(span - time.Second)
	if err := use(inTime); err != nil {
		t.Errorf("used %s after it was issued: %v", span-time.Second, err)
	}
	time.Sleep(time.Second)
	if err := use(late); apiCode(err) != code {
		t.Errorf("used %s after it was issued: %v, want %d", span, err, code)
	}
}

// TestRecallAgainstTheMock: a message the app sent is recalled once, within
// 24 hours; an unknown one, one recalled, and one a day old are refused.
func TestRecallAgainstTheMock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := setup(t, on(newMock(t, mock.Config{}, "zhangsan", "lisi")), wecom.WithAgentID(1000002))
		ctx := context.Background()
		send := func() string { return sendBoth(t, c, &wecom.TextMessage{Content: "hello"}).MsgID }
		first := send()
		if err := c.Messages.Recall(ctx, first); err != nil {
			t.Fatalf("recall: %v", err)
		}
		if err := c.Messages.Recall(ctx, first); apiCode(err) != 40058 {
			t.Errorf("second recall: %v, want 40058", err)
		}
		if err := c.Messages.Recall(ctx, "no-such-msgid"); apiCode(err) != 40058 {
			t.Errorf("recall of an unknown msgid: %v, want 40058", err)
		}
		window(t, 24*time.Hour, send, func(id string) error { return c.Messages.Recall(ctx, id) }, 40058)
	})
}

// TestUpdateTemplateCardAgainstTheMock: a card's response code updates it
// once; again, or a code never issued, or one 72 hours old, is refused
// (60140); unknown members come back as invalid.
func TestUpdateTemplateCardAgainstTheMock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := setup(t, on(newMock(t, mock.Config{}, "zhangsan", "lisi")), wecom.WithAgentID(1000002))
		ctx := context.Background()
		send := func() string {
			res := sendBoth(t, c, docCards()[2].card)
			if res.ResponseCode == "" {
				t.Fatal("no response code")
			}
			return res.ResponseCode
		}
		code := send()
		res, err := c.Messages.UpdateTemplateCard(ctx, wecom.UpdateTemplateCardRequest{ResponseCode: code, Users: []string{"zhangsan", "nobody"}, ReplaceButton: "已处理"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.InvalidUsers, []string{"nobody"}) {
			t.Errorf("invalid users %q, want [nobody]", res.InvalidUsers)
		}
		again := wecom.UpdateTemplateCardRequest{ResponseCode: code, All: true, Card: docCards()[0].card}
		if _, err := c.Messages.UpdateTemplateCard(ctx, again); apiCode(err) != 60140 {
			t.Errorf("a used code: %v, want 60140", err)
		}
		again.ResponseCode = "never-issued"
		if _, err := c.Messages.UpdateTemplateCard(ctx, again); apiCode(err) != 60140 {
			t.Errorf("an unknown code: %v, want 60140", err)
		}
		if _, err := c.Messages.UpdateTemplateCard(ctx, wecom.UpdateTemplateCardRequest{ResponseCode: send(), Users: []string{"nobody"}, ReplaceButton: "x"}); apiCode(err) != 81013 {
			t.Errorf("no known recipient: %v, want 81013", err)
		}
		window(t, 72*time.Hour, send, func(code string) error {
			_, err := c.Messages.UpdateTemplateCard(ctx, wecom.UpdateTemplateCardRequest{ResponseCode: code, All: true, ReplaceButton: "x"})
			return err
		}, 60140)
	})
}

// TestStatisticsAgainstTheMock: the mock counts, per app and day, the
// messages it delivered to each member: today's become yesterday's the
// next day; copies a duplicate check held back, and unknown members, do
// not count.
func TestStatisticsAgainstTheMock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := setup(t, on(newMock(t, mock.Config{}, "zhangsan", "lisi")), wecom.WithAgentID(1000002))
		ctx := context.Background()
		for i, m := range []wecom.Message{
			{ToUser: []string{"zhangsan", "lisi", "nobody"}, Content: &wecom.TextMessage{Content: "a"}},
			{ToUser: []string{"zhangsan"}, Content: &wecom.TextMessage{Content: "b"}, DuplicateCheck: true},
			{ToUser: []string{"zhangsan"}, Content: &wecom.TextMessage{Content: "b"}, DuplicateCheck: true},
			{ToUser: []string{"lisi"}, AgentID: 7, Content: &wecom.TextMessage{Content: "c"}},
		} {
			if _, err := c.Messages.Send(ctx, m); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		want := []wecom.AppStatistic{{AgentID: 7, AppName: "app 7", Count: 1}, {AgentID: 1000002, AppName: "app 1000002", Count: 3}}
		check := func(day wecom.StatisticsDay, want []wecom.AppStatistic) {
			t.Helper()
			got, err := c.Messages.Statistics(ctx, day)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("day %d: %+v, want %+v", day, got, want)
			}
		}
		check(wecom.StatisticsToday, want)
		check(wecom.StatisticsYesterday, []wecom.AppStatistic{})
		time.Sleep(24 * time.Hour)
		check(wecom.StatisticsYesterday, want)
		check(wecom.StatisticsToday, []wecom.AppStatistic{})
	})
}
