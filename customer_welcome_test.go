package wecom_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jarcoal/httpmock"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/mock"
)

// TestWelcomeWire: a welcome message goes out as document/path/92137
// shows it, every kind of attachment with its msgtype.
func TestWelcomeWire(t *testing.T) {
	t.Parallel()
	mt, sent := recorded(map[catalog.ID]string{catalog.SendWelcomeMsg: `{"errcode":0,"errmsg":"ok"}`})
	c := setup(t, wecom.WithTransport(mt))
	err := c.Customers.Welcome(context.Background(), wecom.WelcomeMessage{WelcomeCode: "CALLBACK_CODE", Text: "文本消息内容",
		Attachments: []wecom.Attachment{
			{Image: &wecom.AttachmentImage{MediaID: "MEDIA_ID"}},
			{Link: &wecom.AttachmentLink{Title: "消息标题", PicURL: "https://example.pic.com/path", Desc: "消息描述", URL: "https://example.link.com/path"}},
			{MiniProgram: &wecom.AttachmentMiniProgram{Title: "消息标题", PicMediaID: "MEDIA_ID", AppID: "wx8bd80126147dfAAA", Page: "/path/index.html"}},
			{Video: &wecom.AttachmentMedia{MediaID: "MEDIA_ID"}},
			{File: &wecom.AttachmentMedia{MediaID: "MEDIA_ID"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, sent()[0].body, `{"welcome_code":"CALLBACK_CODE","text":{"content":"文本消息内容"},"attachments":[
		{"msgtype":"image","image":{"media_id":"MEDIA_ID"}},
		{"msgtype":"link","link":{"title":"消息标题","picurl":"https://example.pic.com/path","desc":"消息描述","url":"https://example.link.com/path"}},
		{"msgtype":"miniprogram","miniprogram":{"title":"消息标题","pic_media_id":"MEDIA_ID","appid":"wx8bd80126147dfAAA","page":"/path/index.html"}},
		{"msgtype":"video","video":{"media_id":"MEDIA_ID"}},
		{"msgtype":"file","file":{"media_id":"MEDIA_ID"}}]}`)
}

// TestWelcomeInvalid: what WeCom would refuse is refused unsent.
func TestWelcomeInvalid(t *testing.T) {
	t.Parallel()
	mt, sent := recorded(map[catalog.ID]string{catalog.SendWelcomeMsg: `{"errcode":0,"errmsg":"ok"}`})
	c := setup(t, wecom.WithTransport(mt))
	for name, m := range map[string]wecom.WelcomeMessage{
		"no code":              {Text: "x"},
		"nothing to say":       {WelcomeCode: "c"},
		"text too long":        {WelcomeCode: "c", Text: strings.Repeat("a", 4001)},
		"ten attachments":      {WelcomeCode: "c", Attachments: slices.Repeat([]wecom.Attachment{{File: &wecom.AttachmentMedia{MediaID: "m"}}}, 10)},
		"an empty attachment":  {WelcomeCode: "c", Attachments: []wecom.Attachment{{}}},
		"two kinds in one":     {WelcomeCode: "c", Attachments: []wecom.Attachment{{File: &wecom.AttachmentMedia{MediaID: "m"}, Video: &wecom.AttachmentMedia{MediaID: "m"}}}},
		"an image with both":   {WelcomeCode: "c", Attachments: []wecom.Attachment{{Image: &wecom.AttachmentImage{MediaID: "m", PicURL: "u"}}}},
		"a link without a url": {WelcomeCode: "c", Attachments: []wecom.Attachment{{Link: &wecom.AttachmentLink{Title: "t"}}}},
	} {
		if err := c.Customers.Welcome(context.Background(), m); !errors.Is(err, wecom.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", name, err)
		}
	}
	if n := len(sent()); n != 0 {
		t.Errorf("%d sent", n)
	}
}

// TestWelcomeMock: a welcome code serves once, within its 20 seconds; the
// mock records what the customer got.
func TestWelcomeMock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := newMock(t, mock.Config{})
		srv.AddCustomers(testCorp, "zhangsan", "wmCustomer")
		mt := httpmock.NewMockTransport()
		srv.Register(mt, testBase)
		c := setup(t, wecom.WithTransport(mt))
		ctx := context.Background()
		code := srv.WelcomeCode(testCorp, "zhangsan", "wmCustomer")
		m := wecom.WelcomeMessage{WelcomeCode: code, Text: "welcome", Attachments: []wecom.Attachment{{Link: &wecom.AttachmentLink{Title: "t", URL: "https://example.com"}}}}
		if err := c.Customers.Welcome(ctx, m); err != nil {
			t.Fatal(err)
		}
		want := []mock.Welcome{{UserID: "zhangsan", ExternalUserID: "wmCustomer", Text: "welcome", Attachments: []string{"link"}}}
		if got := srv.Welcomes(testCorp, "wmCustomer"); len(got) != 1 || got[0].Text != want[0].Text || !slices.Equal(got[0].Attachments, want[0].Attachments) || got[0].UserID != "zhangsan" {
			t.Errorf("welcomes %+v, want %+v", got, want)
		}
		var ae *wecom.APIError
		if err := c.Customers.Welcome(ctx, m); !errors.As(err, &ae) || ae.Code != 41051 {
			t.Errorf("the code again: %v, want 41051", err)
		}
		late := srv.WelcomeCode(testCorp, "zhangsan", "wmCustomer")
		time.Sleep(mock.WelcomeCodeTTL)
		m.WelcomeCode = late
		if err := c.Customers.Welcome(ctx, m); !errors.As(err, &ae) || ae.Code != 41051 {
			t.Errorf("a code 20 s old: %v, want 41051", err)
		}
		if n := len(srv.Welcomes(testCorp, "wmCustomer")); n != 1 {
			t.Errorf("%d welcomes, want 1", n)
		}
	})
}
