package wecom_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
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

// testRobotKey looks like a real webhook key.
const testRobotKey = "693a91f6-7aoc-4bc4-97a0-0ec2sifa5aaa"

// robotMock returns a new embedded mock holding the robot testRobotKey.
func robotMock(t *testing.T) *mock.Server {
	t.Helper()
	srv := newMock(t, mock.Config{})
	srv.AddRobot(testRobotKey)
	return srv
}

// pngBytes is the start of a PNG file, enough for its type to be seen.
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 100)...)

// TestRobotWire: every message type goes to webhook/send as WeCom documents
// it (document/path/91770), with the key in the query and no access token
// (no gettoken is made).
func TestRobotWire(t *testing.T) {
	t.Parallel()
	sum := md5.Sum(pngBytes)
	for _, tc := range []struct {
		name string
		m    wecom.RobotMessage
		want string
	}{
		{"text", &wecom.RobotText{Content: "广州今日天气：29度，大部分多云，降雨概率：60%", Mentioned: []string{"wangqing", "@all"}, MentionedMobiles: []string{"13800001111", "@all"}},
			`{"msgtype":"text","text":{"content":"广州今日天气：29度，大部分多云，降雨概率：60%","mentioned_list":["wangqing","@all"],"mentioned_mobile_list":["13800001111","@all"]}}`},
		{"markdown", &wecom.RobotMarkdown{Content: "实时新增用户反馈<font color=\"warning\">132例</font>，请相关同事注意。\n>类型:<font color=\"comment\">用户反馈</font>"},
			`{"msgtype":"markdown","markdown":{"content":"实时新增用户反馈<font color=\"warning\">132例</font>，请相关同事注意。\n>类型:<font color=\"comment\">用户反馈</font>"}}`},
		{"markdown_v2", &wecom.RobotMarkdownV2{Content: "# 一、标题\n| 姓名 | 文化衫尺寸 |\n| :----- | :----: |"},
			`{"msgtype":"markdown_v2","markdown_v2":{"content":"# 一、标题\n| 姓名 | 文化衫尺寸 |\n| :----- | :----: |"}}`},
		{"image", &wecom.RobotImage{Data: pngBytes},
			`{"msgtype":"image","image":{"base64":"` + base64.StdEncoding.EncodeToString(pngBytes) + `","md5":"` + hex.EncodeToString(sum[:]) + `"}}`},
		{"news", &wecom.RobotNews{Articles: []wecom.RobotArticle{{Title: "中秋节礼品领取", Description: "今年中秋节公司有豪礼相送", URL: "www.qq.com", PicURL: "https://res.mail.qq.com/node/ww/wwopenmng/images/independent/doc/test_pic_msg1.png"}}},
			`{"msgtype":"news","news":{"articles":[{"title":"中秋节礼品领取","description":"今年中秋节公司有豪礼相送","url":"www.qq.com","picurl":"https://res.mail.qq.com/node/ww/wwopenmng/images/independent/doc/test_pic_msg1.png"}]}}`},
		{"file", &wecom.RobotFile{MediaID: "3a8asd892asd8asd"}, `{"msgtype":"file","file":{"media_id":"3a8asd892asd8asd"}}`},
		{"voice", &wecom.RobotVoice{MediaID: "MEDIA_ID"}, `{"msgtype":"voice","voice":{"media_id":"MEDIA_ID"}}`},
		{"text_notice", &wecom.TemplateCardMessage{CardType: wecom.CardTextNotice,
			Source:          &wecom.CardSource{IconURL: "https://wework.qpic.cn/wwpic/252813_jOfDHtcISzuodLa_1629280209/0", Desc: "企业微信"},
			MainTitle:       &wecom.CardTitle{Title: "欢迎使用企业微信", Desc: "您的好友正在邀请您加入企业微信"},
			EmphasisContent: &wecom.CardTitle{Title: "100", Desc: "数据含义"},
			QuoteArea:       &wecom.CardQuoteArea{Type: 1, URL: "https://work.weixin.qq.com/?from=openApi", AppID: "APPID", PagePath: "PAGEPATH", Title: "引用文本标题", QuoteText: "Jack：企业微信真的很好用~\nBalian：超级好的一款软件！"},
			SubTitleText:    "下载企业微信还能抢红包！",
			HorizontalContentList: []wecom.CardHorizontalContent{{KeyName: "邀请人", Value: "张三"}, {Type: 1, KeyName: "企微官网", Value: "点击访问", URL: "https://work.weixin.qq.com/?from=openApi"},
				{Type: 2, KeyName: "企微下载", Value: "企业微信.apk", MediaID: "MEDIAID"}},
			JumpList:   []wecom.CardJump{{Type: 1, URL: "https://work.weixin.qq.com/?from=openApi", Title: "企业微信官网"}, {Type: 2, AppID: "APPID", PagePath: "PAGEPATH", Title: "跳转小程序"}},
			CardAction: &wecom.CardAction{Type: 1, URL: "https://work.weixin.qq.com/?from=openApi", AppID: "APPID", PagePath: "PAGEPATH"},
		}, `{"msgtype":"template_card","template_card":{"card_type":"text_notice",
			"source":{"icon_url":"https://wework.qpic.cn/wwpic/252813_jOfDHtcISzuodLa_1629280209/0","desc":"企业微信"},
			"main_title":{"title":"欢迎使用企业微信","desc":"您的好友正在邀请您加入企业微信"},
			"emphasis_content":{"title":"100","desc":"数据含义"},
			"quote_area":{"type":1,"url":"https://work.weixin.qq.com/?from=openApi","appid":"APPID","pagepath":"PAGEPATH","title":"引用文本标题","quote_text":"Jack：企业微信真的很好用~\nBalian：超级好的一款软件！"},
			"sub_title_text":"下载企业微信还能抢红包！",
			"horizontal_content_list":[{"keyname":"邀请人","value":"张三"},{"keyname":"企微官网","value":"点击访问","type":1,"url":"https://work.weixin.qq.com/?from=openApi"},{"keyname":"企微下载","value":"企业微信.apk","type":2,"media_id":"MEDIAID"}],
			"jump_list":[{"type":1,"url":"https://work.weixin.qq.com/?from=openApi","title":"企业微信官网"},{"type":2,"appid":"APPID","pagepath":"PAGEPATH","title":"跳转小程序"}],
			"card_action":{"type":1,"url":"https://work.weixin.qq.com/?from=openApi","appid":"APPID","pagepath":"PAGEPATH"}}}`},
		{"news_notice", &wecom.TemplateCardMessage{CardType: wecom.CardNewsNotice,
			MainTitle:           &wecom.CardTitle{Title: "欢迎使用企业微信", Desc: "您的好友正在邀请您加入企业微信"},
			CardImage:           &wecom.CardImage{URL: "https://wework.qpic.cn/wwpic/354393_4zpkKXd7SrGMvfg_1629280616/0", AspectRatio: 2.25 - 0.01},
			ImageTextArea:       &wecom.CardImageTextArea{Type: 1, URL: "https://work.weixin.qq.com", Title: "欢迎使用企业微信", Desc: "您的好友正在邀请您加入企业微信", ImageURL: "https://wework.qpic.cn/wwpic/354393_4zpkKXd7SrGMvfg_1629280616/0"},
			VerticalContentList: []wecom.CardTitle{{Title: "惊喜红包等你来拿", Desc: "下载企业微信还能抢红包！"}},
			CardAction:          &wecom.CardAction{Type: 2, AppID: "APPID", PagePath: "PAGEPATH"},
		}, `{"msgtype":"template_card","template_card":{"card_type":"news_notice",
			"main_title":{"title":"欢迎使用企业微信","desc":"您的好友正在邀请您加入企业微信"},
			"card_image":{"url":"https://wework.qpic.cn/wwpic/354393_4zpkKXd7SrGMvfg_1629280616/0","aspect_ratio":2.24},
			"image_text_area":{"type":1,"url":"https://work.weixin.qq.com","title":"欢迎使用企业微信","desc":"您的好友正在邀请您加入企业微信","image_url":"https://wework.qpic.cn/wwpic/354393_4zpkKXd7SrGMvfg_1629280616/0"},
			"vertical_content_list":[{"title":"惊喜红包等你来拿","desc":"下载企业微信还能抢红包！"}],
			"card_action":{"type":2,"appid":"APPID","pagepath":"PAGEPATH"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mt := httpmock.NewMockTransport() // no gettoken: a robot call that made one fails
			var got []*http.Request
			var bodies []string
			mt.RegisterResponder(http.MethodPost, testBase+catalog.WebhookSend.Path(), func(r *http.Request) (*http.Response, error) {
				b, _ := io.ReadAll(r.Body)
				got, bodies = append(got, r), append(bodies, string(b))
				return httpmock.NewStringResponse(http.StatusOK, `{"errcode":0,"errmsg":"ok"}`), nil
			})
			r := setupRobot(t, testRobotKey, wecom.WithTransport(mt))
			if err := r.Send(context.Background(), tc.m); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("%d requests", len(got))
			}
			if q := got[0].URL.Query(); q.Get("key") != testRobotKey || len(q) != 1 {
				t.Errorf("query %q, want only the key", got[0].URL.RawQuery)
			}
			var g, w any
			if err := json.Unmarshal([]byte(bodies[0]), &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if gj, wj := mustJSON(t, g), mustJSON(t, w); gj != wj {
				t.Errorf("sent %s\nwant %s", gj, wj)
			}
		})
	}
}

// TestRobotValidates: a message WeCom would refuse is refused before
// anything is sent, with an error matching ErrInvalidRequest.
func TestRobotValidates(t *testing.T) {
	t.Parallel()
	action := &wecom.CardAction{Type: 1, URL: "https://work.weixin.qq.com"}
	title := &wecom.CardTitle{Title: "t"}
	for _, tc := range []struct {
		name string
		m    wecom.RobotMessage
	}{
		{"nil", nil},
		{"empty text", &wecom.RobotText{}},
		{"text over 2048 bytes", &wecom.RobotText{Content: strings.Repeat("字", 683)}},
		{"empty mention", &wecom.RobotText{Content: "x", Mentioned: []string{""}}},
		{"markdown over 4096 bytes", &wecom.RobotMarkdown{Content: strings.Repeat("a", 4097)}},
		{"empty markdown_v2", &wecom.RobotMarkdownV2{}},
		{"no image", &wecom.RobotImage{}},
		{"image over 2 MB", &wecom.RobotImage{Data: append(bytes.Clone(pngBytes), make([]byte, 2<<20)...)}},
		{"image not a JPG or PNG", &wecom.RobotImage{Data: []byte("GIF89a and more bytes")}},
		{"no articles", &wecom.RobotNews{}},
		{"nine articles", &wecom.RobotNews{Articles: make([]wecom.RobotArticle, 9)}},
		{"article without url", &wecom.RobotNews{Articles: []wecom.RobotArticle{{Title: "t"}}}},
		{"file without media_id", &wecom.RobotFile{}},
		{"voice without media_id", &wecom.RobotVoice{}},
		{"text_notice without titles", &wecom.TemplateCardMessage{CardType: wecom.CardTextNotice, CardAction: action}},
		{"text_notice without action", &wecom.TemplateCardMessage{CardType: wecom.CardTextNotice, MainTitle: title}},
		{"text_notice url action without url", &wecom.TemplateCardMessage{CardType: wecom.CardTextNotice, MainTitle: title, CardAction: &wecom.CardAction{Type: 1}}},
		{"text_notice seven fields", &wecom.TemplateCardMessage{CardType: wecom.CardTextNotice, MainTitle: title, CardAction: action, HorizontalContentList: make([]wecom.CardHorizontalContent, 7)}},
		{"text_notice file field without media_id", &wecom.TemplateCardMessage{CardType: wecom.CardTextNotice, MainTitle: title, CardAction: action, HorizontalContentList: []wecom.CardHorizontalContent{{Type: 2, KeyName: "k"}}}},
		{"text_notice four jumps", &wecom.TemplateCardMessage{CardType: wecom.CardTextNotice, MainTitle: title, CardAction: action, JumpList: make([]wecom.CardJump, 4)}},
		{"news_notice without image", &wecom.TemplateCardMessage{CardType: wecom.CardNewsNotice, MainTitle: title, CardAction: action}},
		{"news_notice aspect ratio", &wecom.TemplateCardMessage{CardType: wecom.CardNewsNotice, MainTitle: title, CardAction: action, CardImage: &wecom.CardImage{URL: "u", AspectRatio: 3}}},
		{"news_notice five lines", &wecom.TemplateCardMessage{CardType: wecom.CardNewsNotice, MainTitle: title, CardAction: action, CardImage: &wecom.CardImage{URL: "u"},
			VerticalContentList: []wecom.CardTitle{{Title: "1"}, {Title: "2"}, {Title: "3"}, {Title: "4"}, {Title: "5"}}}},
		{"an interactive card", &wecom.TemplateCardMessage{CardType: wecom.CardButtonInteraction, TaskID: "t1", MainTitle: title,
			ButtonList: []wecom.CardButton{{Text: "ok", Key: "ok"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := robotMock(t)
			r := setupRobot(t, testRobotKey, on(srv))
			err := r.Send(context.Background(), tc.m)
			if !errors.Is(err, wecom.ErrInvalidRequest) {
				t.Fatalf("got %v, want ErrInvalidRequest", err)
			}
			if n := srv.Stats().Calls[catalog.WebhookSend.Path()]; n != 0 {
				t.Errorf("%d calls reached the server", n)
			}
		})
	}
}

// TestRobotMockRefuses: the mock refuses what WeCom refuses (the SDK's
// checks bypassed with a robot the SDK does not check: Client.Do cannot
// call a robot, so the body is sent raw through the transport).
func TestRobotMockRefuses(t *testing.T) {
	t.Parallel()
	srv := robotMock(t)
	h := srv.Handler()
	sum := md5.Sum(pngBytes)
	img := base64.StdEncoding.EncodeToString(pngBytes)
	for _, tc := range []struct {
		name, key, body string
		code            int
	}{
		{"unknown key", "6f1c0c5e-0000-4000-8000-000000000000", `{"msgtype":"text","text":{"content":"x"}}`, 93000},
		{"no key", "", `{"msgtype":"text","text":{"content":"x"}}`, 93000},
		{"empty text", testRobotKey, `{"msgtype":"text","text":{"content":""}}`, 44004},
		{"md5 of the base64", testRobotKey, `{"msgtype":"image","image":{"base64":"` + img + `","md5":"` + fmt.Sprintf("%x", md5.Sum([]byte(img))) + `"}}`, 40058},
		{"unknown media", testRobotKey, `{"msgtype":"file","file":{"media_id":"nope"}}`, 40007},
		{"unknown type", testRobotKey, `{"msgtype":"video","video":{"media_id":"m"}}`, 40008},
		{"good image", testRobotKey, `{"msgtype":"image","image":{"base64":"` + img + `","md5":"` + hex.EncodeToString(sum[:]) + `"}}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "/cgi-bin/webhook/send?key="+tc.key, strings.NewReader(tc.body))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var a struct {
				ErrCode int `json:"errcode"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || a.ErrCode != tc.code {
				t.Errorf("answered %s, want errcode %d", rec.Body, tc.code)
			}
		})
	}
	if n := len(srv.RobotMessages(testRobotKey)); n != 1 {
		t.Errorf("%d messages recorded, want the one good image", n)
	}
}

// TestRobotNeverRefused: 25 messages to one robot in a burst, more than its
// 20 a minute: 20 go in the first minute, the others wait for room, and the
// mock refuses none. Without the robot's rule, the mock refuses some with
// 45009, as WeCom would: the test can see a refusal.
func TestRobotNeverRefused(t *testing.T) {
	t.Parallel()
	burst := func(t *testing.T, opts ...wecom.Option) (*mock.Server, time.Time, []error) {
		srv := robotMock(t)
		r := setupRobot(t, testRobotKey, append([]wecom.Option{on(srv)}, opts...)...)
		start := time.Now()
		errs := make([]error, 25)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = r.Send(context.Background(), &wecom.RobotText{Content: fmt.Sprint("n", i)}) })
		}
		wg.Wait()
		return srv, start, errs
	}
	synctest.Test(t, func(t *testing.T) {
		srv, start, errs := burst(t)
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		msgs := srv.RobotMessages(testRobotKey)
		first := 0
		for _, m := range msgs {
			if m.Sent.Before(start.Add(time.Minute)) {
				first++
			}
		}
		if len(msgs) != 25 || first != 20 {
			t.Errorf("%d messages delivered, %d in the first minute; want 25 and 20", len(msgs), first)
		}
		if n := srv.Stats().Refusals[45009]; n != 0 {
			t.Errorf("the mock refused %d sends with 45009", n)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		srv, _, errs := burst(t, wecom.WithoutRule(catalog.WebhookSend.Path(), catalog.RuleRobotMinute))
		if srv.Stats().Refusals[45009] == 0 || errors.Join(errs...) == nil {
			t.Error("without the robot's rule the mock refused nothing: the test cannot see a refusal")
		}
	})
}

// TestRobotUploadStreamed: Upload streams the file to webhook/upload_media
// (the transport reads the start before the reader gives the end), the
// robot's messages then send it, and only file and voice are taken.
func TestRobotUploadStreamed(t *testing.T) {
	t.Parallel()
	srv := robotMock(t)
	mt := srvTransport(srv)
	const size = 3 << 20
	src := &countingReader{r: io.LimitReader(patternReader{}, size)}
	early := -1
	rt := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Path == catalog.WebhookUpload.Path() {
			if req.ContentLength <= size {
				t.Errorf("Content-Length %d, want the file and its multipart framing", req.ContentLength)
			}
			head := make([]byte, 64<<10)
			if _, err := io.ReadFull(req.Body, head); err != nil {
				return nil, err
			}
			early = src.total()
			req = req.Clone(req.Context())
			req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(head), req.Body))
		}
		return mt.RoundTrip(req)
	})
	r := setupRobot(t, testRobotKey, wecom.WithTransport(rt))
	m, err := r.Upload(context.Background(), wecom.UploadRequest{Type: wecom.MediaFile, Filename: "报表.xlsx", Body: src, Size: size})
	if err != nil {
		t.Fatal(err)
	}
	if early < 0 || early >= size {
		t.Errorf("the reader had given %d of %d bytes when the transport had read 64 KiB: the upload was not streamed", early, size)
	}
	name, data, ok := srv.RobotMedia(testRobotKey, m.ID)
	if !ok || name != "报表.xlsx" || len(data) != size || m.Type != wecom.MediaFile {
		t.Fatalf("stored %q (%d bytes, %v) as %+v", name, len(data), ok, m)
	}
	if err := r.Send(context.Background(), &wecom.RobotFile{MediaID: m.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Upload(context.Background(), wecom.UploadRequest{Type: wecom.MediaImage, Filename: "a.png", Body: bytes.NewReader(pngBytes)}); !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Errorf("an image upload: %v, want ErrInvalidRequest", err)
	}
}

// TestRobotKeyNeverShown: the key is in no error and no log line, whatever
// fails: a bad key, an unknown robot, a lost connection whose error holds
// the URL, an HTTP 502, a send over the robot's minute that cannot wait.
func TestRobotKeyNeverShown(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var texts []string
	record := func(err error) {
		if err == nil {
			t.Error("no error")
			return
		}
		texts = append(texts, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
	}

	_, err := wecom.NewRobot("https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=" + testRobotKey)
	record(err)

	mt := srvTransport(newMock(t, mock.Config{}))
	unknown := setupRobot(t, testRobotKey, wecom.WithTransport(mt), wecom.WithLogger(logger)) // not added: 93000
	err = unknown.Send(context.Background(), &wecom.RobotText{Content: "x"})
	if !errors.Is(err, wecom.ErrBadCredentials) || !strings.Contains(err.Error(), "robot") {
		t.Errorf("an unknown robot: %v, want ErrBadCredentials naming the robot", err)
	}
	record(err)

	broken := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return nil, fmt.Errorf("dial %s: connection refused", req.URL)
	})
	lost := setupRobot(t, testRobotKey, wecom.WithTransport(broken), wecom.WithLogger(logger), fastRetries())
	record(lost.Send(context.Background(), &wecom.RobotText{Content: "x"}))
	_, err = lost.Upload(context.Background(), wecom.UploadRequest{Type: wecom.MediaFile, Filename: "a.txt", Body: strings.NewReader("hello, wecom")})
	record(err)

	bad := httpmock.NewMockTransport()
	bad.RegisterNoResponder(httpmock.NewStringResponder(http.StatusBadGateway, "<html>bad gateway for key="+testRobotKey+"</html>"))
	record(setupRobot(t, testRobotKey, wecom.WithTransport(bad), wecom.WithLogger(logger), fastRetries()).Send(context.Background(), &wecom.RobotText{Content: "x"}))

	srv2 := robotMock(t)
	r := setupRobot(t, testRobotKey, on(srv2), wecom.WithLogger(logger))
	_ = srv2
	for range 20 {
		if err := r.Send(context.Background(), &wecom.RobotText{Content: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = r.Send(ctx, &wecom.RobotText{Content: "x"})
	var rl *wecom.RateLimitError
	if !errors.As(err, &rl) {
		t.Errorf("the 21st send within a second: %v, want a *RateLimitError", err)
	}
	record(err)

	mu.Lock()
	texts = append(texts, logs.String())
	mu.Unlock()
	for _, s := range texts {
		if strings.Contains(s, testRobotKey) || strings.Contains(s, strings.ToUpper(testRobotKey)) {
			t.Errorf("the key shows in %q", s)
		}
	}
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r  io.Reader
	mu sync.Mutex
	n  int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
	return n, err
}

func (c *countingReader) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// patternReader reads an endless run of bytes, in small pieces.
type patternReader struct{}

func (patternReader) Read(p []byte) (int, error) {
	n := min(len(p), 4096)
	for i := range p[:n] {
		p[i] = byte('a' + i%26)
	}
	return n, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// lockedWriter serializes the writes of log handlers on several goroutines.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestRobotFailures: a 45009 cools down that robot only (the next send fails
// without a request; another robot on the same limiter still sends); a -1
// on a send is not repeated and may have been done; a -1 on an upload is.
func TestRobotFailures(t *testing.T) {
	t.Parallel()
	const other = "0b5c9a3e-1d2f-4e6a-8b7c-9d0e1f2a3b4c"
	mt := httpmock.NewMockTransport()
	answer := func(code int) httpmock.Responder {
		return httpmock.NewStringResponder(http.StatusOK, fmt.Sprintf(`{"errcode":%d,"errmsg":"fake %d"}`, code, code))
	}
	mt.RegisterResponderWithQuery(http.MethodPost, testBase+catalog.WebhookSend.Path(), "key="+testRobotKey, answer(45009))
	mt.RegisterResponderWithQuery(http.MethodPost, testBase+catalog.WebhookSend.Path(), "key="+other, answer(0))
	limiter := throttle.NewMemory()
	r := setupRobot(t, testRobotKey, wecom.WithTransport(mt), wecom.WithLimiter(limiter))
	if err := r.Send(context.Background(), &wecom.RobotText{Content: "x"}); !errors.Is(err, wecom.ErrRateLimited) {
		t.Fatalf("a send answered 45009: %v, want ErrRateLimited", err)
	}
	before := mt.GetTotalCallCount()
	if err := r.Send(context.Background(), &wecom.RobotText{Content: "x"}); !errors.Is(err, wecom.ErrRateLimited) || mt.GetTotalCallCount() != before {
		t.Errorf("a send during the cooldown: %v after %d requests, want ErrRateLimited and none", err, mt.GetTotalCallCount()-before)
	}
	if err := setupRobot(t, other, wecom.WithTransport(mt), wecom.WithLimiter(limiter)).Send(context.Background(), &wecom.RobotText{Content: "x"}); err != nil {
		t.Errorf("another robot on the same limiter: %v", err)
	}

	busy := httpmock.NewMockTransport()
	busy.RegisterNoResponder(answer(-1))
	b := setupRobot(t, testRobotKey, wecom.WithTransport(busy), fastRetries())
	if err := b.Send(context.Background(), &wecom.RobotText{Content: "x"}); !errors.Is(err, wecom.ErrMaybeDone) {
		t.Errorf("a send answered -1: %v, want ErrMaybeDone", err)
	}
	if n := busy.GetTotalCallCount(); n != 1 {
		t.Errorf("a send answered -1 was sent %d times, want once", n)
	}
	if _, err := b.Upload(context.Background(), wecom.UploadRequest{Type: wecom.MediaVoice, Filename: "a.amr", Body: strings.NewReader("#!AMR and more")}); err == nil {
		t.Error("an upload answered -1 succeeded")
	}
	if n := busy.GetTotalCallCount(); n <= 2 {
		t.Errorf("an upload answered -1 was sent %d times, want it retried", n-1)
	}
}

// TestRobotUploadNotCounted: uploads do not count against a robot's 20
// messages a minute (91770 caps messages): after 20 sends, an upload within
// the same minute goes at once.
func TestRobotUploadNotCounted(t *testing.T) {
	t.Parallel()
	srv := robotMock(t)
	r := setupRobot(t, testRobotKey, on(srv))
	for range 20 {
		if err := r.Send(context.Background(), &wecom.RobotText{Content: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := r.Upload(ctx, wecom.UploadRequest{Type: wecom.MediaFile, Filename: "a.txt", Body: strings.NewReader("hello, wecom")}); err != nil {
		t.Fatalf("an upload after 20 sends: %v", err)
	}
	if n := srv.Stats().Refusals[45009]; n != 0 {
		t.Errorf("the mock refused %d calls", n)
	}
}
