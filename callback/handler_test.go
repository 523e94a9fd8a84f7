package callback_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom/callback"
)

func TestURLCheck(t *testing.T) {
	t.Parallel()
	c := docCrypto(t)
	// The documented vector is from 2014: no timestamp window.
	h, err := callback.NewHandler(c, callback.WithTimestampWindow(0))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, h: h, srv: newServer(t, h)}
	r.client = r.srv.Client()
	q := url.Values{"msg_signature": {docURLSignature}, "timestamp": {docURLTimestamp}, "nonce": {docURLNonce}, "echostr": {docEchoStr}}
	if code, body := r.do(http.MethodGet, q, nil); code != http.StatusOK || body != docEchoPlain {
		t.Fatalf("URL check = %d %q, want 200 %q exactly", code, body, docEchoPlain)
	}
	// A '+' sent unencoded arrives as a space; it is read back as '+'.
	raw := "msg_signature=" + docURLSignature + "&timestamp=" + docURLTimestamp + "&nonce=" + docURLNonce + "&echostr=" + docEchoStr
	resp, err := r.client.Get(r.srv.URL + "/?" + raw)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("URL check with raw '+': %d", resp.StatusCode)
	}
	q.Set("msg_signature", strings.Repeat("a", 40))
	if code, _ := r.do(http.MethodGet, q, nil); code != http.StatusForbidden {
		t.Fatalf("URL check with a bad signature = %d, want 403", code)
	}
	q.Del("echostr")
	if code, _ := r.do(http.MethodGet, q, nil); code != http.StatusBadRequest {
		t.Fatalf("URL check without echostr = %d, want 400", code)
	}
}

func TestDocumentedPost(t *testing.T) {
	t.Parallel()
	c := docCrypto(t)
	h, err := callback.NewHandler(c, callback.WithTimestampWindow(0))
	if err != nil {
		t.Fatal(err)
	}
	var texts collector[*callback.TextMessage]
	callback.Handle(h, texts.handle)
	r := &rig{t: t, h: h, srv: newServer(t, h)}
	r.client = r.srv.Client()
	q := url.Values{"msg_signature": {docMsgSignature}, "timestamp": {docMsgTimestamp}, "nonce": {docMsgNonce}}
	body := "<xml><ToUserName><![CDATA[wx5823bf96d3bd56c7]]></ToUserName><Encrypt><![CDATA[" + docMsgEncrypt + "]]></Encrypt><AgentID><![CDATA[218]]></AgentID></xml>"
	if code, out := r.do(http.MethodPost, q, strings.NewReader(body)); code != http.StatusOK || out != "" {
		t.Fatalf("POST = %d %q, want an empty 200", code, out)
	}
	got := texts.all()
	if len(got) != 1 {
		t.Fatalf("delivered %d texts, want 1", len(got))
	}
	m := got[0]
	if m.Content != "hello" || m.MsgID != "4561255354251345929" || m.FromUserName != "mycreate" || m.AgentID != 218 || m.CreateTime != 1409659813 {
		t.Fatalf("text = %+v", m)
	}
}

func TestPostEndToEnd(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var customers collector[*callback.ExternalContactEvent]
	var tickets collector[*callback.SuiteTicketEvent]
	callback.Handle(r.h, customers.handle)
	callback.Handle(r.h, tickets.handle)
	add := `<xml><ToUserName><![CDATA[` + testCorpID + `]]></ToUserName><FromUserName><![CDATA[sys]]></FromUserName><CreateTime>1403610513</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[change_external_contact]]></Event><ChangeType><![CDATA[add_external_contact]]></ChangeType><UserID><![CDATA[zhangsan]]></UserID><ExternalUserID><![CDATA[woAJ2GCAAAXtWyujaWJHDDGi0mACAAAA]]></ExternalUserID><State><![CDATA[teststate]]></State><WelcomeCode><![CDATA[WELCOMECODE]]></WelcomeCode></xml>`
	if code, body := r.send(add); code != http.StatusOK || body != "" {
		t.Fatalf("POST = %d %q, want an empty 200", code, body)
	}
	got := customers.all()
	if len(got) != 1 || got[0].WelcomeCode != "WELCOMECODE" || got[0].ChangeType != callback.ChangeAddExternalContact || got[0].ExternalUserID != "woAJ2GCAAAXtWyujaWJHDDGi0mACAAAA" || got[0].State != "teststate" {
		t.Fatalf("delivered %+v", got)
	}
	if !strings.Contains(string(got[0].XML), "WELCOMECODE") {
		t.Fatalf("XML not kept: %q", got[0].XML)
	}
	// A suite's command callback is answered with the literal "success".
	ticket := `<xml><SuiteId><![CDATA[ww4asffe99e54c0fxxxx]]></SuiteId><InfoType><![CDATA[suite_ticket]]></InfoType><TimeStamp>1403610513</TimeStamp><SuiteTicket><![CDATA[asdfasfdasdfasdf]]></SuiteTicket></xml>`
	if code, body := r.send(ticket); code != http.StatusOK || body != "success" {
		t.Fatalf("suite ticket = %d %q, want 200 success", code, body)
	}
	if ts := tickets.all(); len(ts) != 1 || ts[0].SuiteTicket != "asdfasfdasdfasdf" || ts[0].SuiteID != "ww4asffe99e54c0fxxxx" {
		t.Fatalf("tickets %+v", ts)
	}
	if s := r.h.Stats(); s.Delivered != 2 || s.Rejected != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestPassiveReply(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	callback.HandleReply(r.h, func(_ context.Context, m *callback.TextMessage) ([]byte, error) {
		return callback.TextReply(m, "echo: "+m.Content), nil
	})
	code, body := r.send(textXML("1", "hi <there>"))
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	var env struct{ Encrypt, MsgSignature, TimeStamp, Nonce string }
	if err := xmlUnmarshal([]byte(body), &env); err != nil {
		t.Fatalf("reply %q: %v", body, err)
	}
	plain, err := r.wecom.Decrypt(env.MsgSignature, env.TimeStamp, env.Nonce, env.Encrypt)
	if err != nil {
		t.Fatal(err)
	}
	var reply struct{ ToUserName, FromUserName, MsgType, Content string }
	if err := xmlUnmarshal(plain, &reply); err != nil {
		t.Fatal(err)
	}
	if reply.ToUserName != "zhangsan" || reply.FromUserName != testCorpID || reply.MsgType != "text" || reply.Content != "echo: hi <there>" {
		t.Fatalf("reply %+v", reply)
	}
}

// TestRejects sends every kind of bad request: each is a clean 4xx, never
// a 500, delivers nothing, and leaves a log line without secrets.
func TestRejects(t *testing.T) {
	t.Parallel()
	other, err := callback.NewCrypto(testToken, testKey, "ww-another-corp")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	good := func(t *testing.T, r *rig) signed { return seal(t, r.wecom, textXML("9", "secret plaintext"), now) }
	with := func(key, value string) func(*testing.T, *rig) signed {
		return func(t *testing.T, r *rig) signed {
			s := good(t, r)
			s.query.Set(key, value)
			return s
		}
	}
	without := func(key string) func(*testing.T, *rig) signed {
		return func(t *testing.T, r *rig) signed {
			s := good(t, r)
			s.query.Del(key)
			return s
		}
	}
	for _, tc := range []struct {
		name   string
		method string
		req    func(*testing.T, *rig) signed
		want   int
	}{
		{"method", http.MethodPut, good, http.StatusMethodNotAllowed},
		{"no signature", "", without("msg_signature"), http.StatusBadRequest},
		{"no timestamp", "", without("timestamp"), http.StatusBadRequest},
		{"no nonce", "", without("nonce"), http.StatusBadRequest},
		{"timestamp not a number", "", with("timestamp", "12a"), http.StatusBadRequest},
		{"stale timestamp", "", func(t *testing.T, r *rig) signed {
			return seal(t, r.wecom, textXML("9", "x"), now-int64(6*time.Minute/time.Second))
		}, http.StatusBadRequest},
		{"future timestamp", "", func(t *testing.T, r *rig) signed {
			return seal(t, r.wecom, textXML("9", "x"), now+int64(6*time.Minute/time.Second))
		}, http.StatusBadRequest},
		{"body too large", "", func(t *testing.T, r *rig) signed {
			s := good(t, r)
			s.body += strings.Repeat(" ", 2048)
			return s
		}, http.StatusRequestEntityTooLarge},
		{"body not XML", "", func(t *testing.T, r *rig) signed {
			s := good(t, r)
			s.body = "{not xml"
			return s
		}, http.StatusBadRequest},
		{"no Encrypt", "", func(t *testing.T, r *rig) signed {
			s := good(t, r)
			s.body = "<xml><ToUserName>x</ToUserName></xml>"
			return s
		}, http.StatusBadRequest},
		{"two Encrypt elements", "", func(t *testing.T, r *rig) signed {
			s := good(t, r)
			s.body = strings.Replace(s.body, "<Encrypt>", "<Encrypt><![CDATA[AAAA]]></Encrypt><Encrypt>", 1)
			return s
		}, http.StatusBadRequest},
		{"bad signature", "", with("msg_signature", strings.Repeat("0", 40)), http.StatusForbidden},
		{"wrong receive id", "", func(t *testing.T, _ *rig) signed { return seal(t, other, textXML("9", "x"), now) }, http.StatusForbidden},
		{"partial block", "", func(t *testing.T, r *rig) signed {
			return sealed(r.wecom, base64.StdEncoding.EncodeToString(make([]byte, 40)), now)
		}, http.StatusBadRequest},
		{"decrypts to non-XML", "", func(t *testing.T, r *rig) signed { return seal(t, r.wecom, "not <xml", now) }, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, callback.WithMaxBodySize(1024))
			var delivered atomic.Int32
			callback.Handle(r.h, func(context.Context, callback.Event) error { delivered.Add(1); return nil })
			s := tc.req(t, r)
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			code, _ := r.do(method, s.query, strings.NewReader(s.body))
			if code != tc.want {
				t.Fatalf("status %d, want %d", code, tc.want)
			}
			if delivered.Load() != 0 || r.h.Stats().Rejected != 1 {
				t.Fatalf("delivered %d, stats %+v", delivered.Load(), r.h.Stats())
			}
			logs := r.logs.String()
			if !strings.Contains(logs, "rejected") || !strings.Contains(logs, "status="+strconv.Itoa(tc.want)) {
				t.Fatalf("no log line: %q", logs)
			}
			for _, secret := range []string{testToken, testKey, "secret plaintext", s.query.Get("msg_signature")} {
				if secret != "" && strings.Contains(logs, secret) {
					t.Fatalf("log holds a secret %q: %s", secret, logs)
				}
			}
		})
	}
}

// TestEventsOwnTheirXML: the buffers a Handler reuses between requests
// are never those an Event keeps: a callback's XML and fields are intact
// after the callbacks that follow it.
func TestEventsOwnTheirXML(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var got collector[*callback.TextMessage]
	callback.Handle(r.h, got.handle)
	want := []string{textXML("1", "first"), textXML("2", strings.Repeat("second, longer ", 40)), textXML("3", "3")}
	for _, msg := range want {
		if code, _ := r.send(msg); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
	}
	all := got.all()
	if len(all) != len(want) {
		t.Fatalf("delivered %d of %d", len(all), len(want))
	}
	for i, m := range all {
		if string(m.XML) != want[i] || m.MsgID != strconv.Itoa(i+1) {
			t.Errorf("callback %d: MsgId %q, XML %q; want %q", i, m.MsgID, m.XML, want[i])
		}
	}
}

// TestBodyTooLargeChunked: a body without Content-Length is cut at the
// limit and refused.
func TestBodyTooLargeChunked(t *testing.T) {
	t.Parallel()
	r := newRig(t, callback.WithMaxBodySize(1024))
	s := seal(t, r.wecom, textXML("1", strings.Repeat("x", 2000)), time.Now().Unix())
	pr := strings.NewReader(s.body)
	req, err := http.NewRequest(http.MethodPost, r.srv.URL+"/?"+s.query.Encode(), struct{ *strings.Reader }{pr})
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
}

func TestRetryDeliveredOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var texts collector[*callback.TextMessage]
	var contacts collector[*callback.ContactEvent]
	callback.Handle(r.h, texts.handle)
	callback.Handle(r.h, contacts.handle)
	created := time.Now().Unix()
	// WeCom's three attempts: the same plaintext, encrypted and signed anew.
	for range 3 {
		if code, _ := r.send(textXML("777", "once")); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
		if code, _ := r.send(contactXML("lisi", created)); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
	}
	if n, m := len(texts.all()), len(contacts.all()); n != 1 || m != 1 {
		t.Fatalf("delivered %d texts and %d contact events, want 1 and 1", n, m)
	}
	if s := r.h.Stats(); s.Duplicates != 4 || s.Delivered != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// TestSameSecondEventsBothDelivered: two contact changes in one second,
// both from "sys", both delivered (deduplicating on
// FromUserName+CreateTime would drop one).
func TestSameSecondEventsBothDelivered(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var contacts collector[*callback.ContactEvent]
	callback.Handle(r.h, contacts.handle)
	created := time.Now().Unix()
	for _, user := range []string{"zhangsan", "lisi"} {
		if code, _ := r.send(contactXML(user, created)); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
	}
	got := contacts.all()
	if len(got) != 2 || got[0].UserID != "zhangsan" || got[1].UserID != "lisi" || got[0].CreateTime != got[1].CreateTime {
		t.Fatalf("delivered %+v", got)
	}
}

func TestUnknownKindDeliveredRaw(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var raws collector[*callback.RawEvent]
	var all collector[callback.Event]
	callback.Handle(r.h, raws.handle)
	callback.Handle(r.h, all.handle)
	unknown := `<xml><ToUserName><![CDATA[` + testCorpID + `]]></ToUserName><FromUserName><![CDATA[sys]]></FromUserName><CreateTime>1700000000</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[brand_new_event]]></Event><ChangeType><![CDATA[brand_new_change]]></ChangeType><Extra>42</Extra></xml>`
	if code, _ := r.send(unknown); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	got := raws.all()
	if len(got) != 1 || got[0].Event != "brand_new_event" || got[0].ChangeType != "brand_new_change" || got[0].MsgType != "event" || !strings.Contains(string(got[0].XML), "<Extra>42</Extra>") {
		t.Fatalf("raw %+v", got)
	}
	// A known kind without a handler of its own goes to the Event handler.
	if code, _ := r.send(textXML("5", "to all")); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if a := all.all(); len(a) != 1 {
		t.Fatalf("catch-all got %d", len(a))
	} else if m, ok := a[0].(*callback.TextMessage); !ok || m.Content != "to all" {
		t.Fatalf("catch-all got %#v", a[0])
	}
	// Nothing registered at all: acknowledged, not refused.
	callback.Handle[callback.Event](r.h, nil)
	callback.Handle[*callback.RawEvent](r.h, nil)
	if code, _ := r.send(strings.Replace(unknown, "42", "43", 1)); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
}

func TestHandlerErrorRetried(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	calls := 0
	callback.Handle(r.h, func(_ context.Context, m *callback.TextMessage) error {
		calls++
		switch calls {
		case 1:
			return errors.New("database down")
		case 2:
			panic("handler bug")
		}
		return nil
	})
	for i, want := range []int{http.StatusInternalServerError, http.StatusInternalServerError, http.StatusOK, http.StatusOK} {
		if code, _ := r.send(textXML("31", "retry me")); code != want {
			t.Fatalf("attempt %d: status %d, want %d", i+1, code, want)
		}
	}
	if s := r.h.Stats(); calls != 3 || s.Failed != 2 || s.Delivered != 1 || s.Duplicates != 1 {
		t.Fatalf("calls %d, stats %+v", calls, s)
	}
	if logs := r.logs.String(); !strings.Contains(logs, "database down") || !strings.Contains(logs, "panicked") {
		t.Fatalf("logs %s", logs)
	}
}

type failingDeduper struct{}

func (failingDeduper) Seen(context.Context, string, time.Duration) (bool, error) {
	return false, errors.New("redis: connection refused")
}
func (failingDeduper) Forget(context.Context, string) error { return nil }

// TestDeduperDownDelivers: a deduper that fails does not lose callbacks.
func TestDeduperDownDelivers(t *testing.T) {
	t.Parallel()
	r := newRig(t, callback.WithDeduper(failingDeduper{}, 0))
	var texts collector[*callback.TextMessage]
	callback.Handle(r.h, texts.handle)
	for range 2 {
		if code, _ := r.send(textXML("8", "x")); code != http.StatusOK {
			t.Fatalf("status %d", code)
		}
	}
	if n := len(texts.all()); n != 2 || !strings.Contains(r.logs.String(), "deduper failed") {
		t.Fatalf("delivered %d; logs %s", n, r.logs.String())
	}
}

func TestNewHandlerRejects(t *testing.T) {
	t.Parallel()
	c := docCrypto(t)
	for name, opt := range map[string]callback.Option{
		"nil logger":       callback.WithLogger(nil),
		"body size":        callback.WithMaxBodySize(0),
		"negative window":  callback.WithTimestampWindow(-time.Second),
		"zero timeout":     callback.WithTimeout(0),
		"nil deduper":      callback.WithDeduper(nil, time.Minute),
		"empty queue":      callback.WithQueue(0, 1),
		"no queue workers": callback.WithQueue(1, 0),
	} {
		if h, err := callback.NewHandler(c, opt); h != nil || !errors.Is(err, callback.ErrConfig) {
			t.Errorf("%s: %v, %v", name, h, err)
		}
	}
	if h, err := callback.NewHandler(nil); h != nil || !errors.Is(err, callback.ErrConfig) {
		t.Errorf("nil crypto: %v, %v", h, err)
	}
}
