package callback_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom/callback"
)

func xmlUnmarshal(b []byte, v any) error { return xml.Unmarshal(b, v) }

// Test credentials of a corp's app.
const (
	testToken  = "t0kenOfTheApp"
	testCorpID = "ww0123456789abcdef"
)

// testKey is a valid EncodingAESKey.
var testKey = strings.Repeat("k", 42) + "A"

// logBuf is a concurrent-safe buffer for a slog text handler.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// rig is a Handler behind an httptest server, and WeCom's side: a Crypto
// with the same token and key that encrypts and signs as WeCom does.
type rig struct {
	t      *testing.T
	h      *callback.Handler
	srv    *httptest.Server
	wecom  *callback.Crypto
	logs   *logBuf
	client *http.Client
}

// newRig starts a Handler for testCorpID with opts (a logger first).
func newRig(t *testing.T, opts ...callback.Option) *rig {
	t.Helper()
	c, err := callback.NewCrypto(testToken, testKey, testCorpID)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuf{}
	opts = append([]callback.Option{callback.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}, opts...)
	h, err := callback.NewHandler(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return &rig{t: t, h: h, srv: srv, wecom: c, logs: logs, client: srv.Client()}
}

// nonce returns a random nonce.
func nonce() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// signed is a POST as WeCom makes it: query parameters and XML body.
type signed struct {
	query url.Values
	body  string
}

// seal encrypts msg with c as WeCom does, at time ts.
func seal(t testing.TB, c *callback.Crypto, msg string, ts int64) signed {
	t.Helper()
	enc, err := c.Encrypt([]byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	return sealed(c, enc, ts)
}

// sealed signs a ciphertext and wraps it in WeCom's envelope.
func sealed(c *callback.Crypto, enc string, ts int64) signed {
	tss, n := strconv.FormatInt(ts, 10), nonce()
	q := url.Values{"msg_signature": {c.Sign(tss, n, enc)}, "timestamp": {tss}, "nonce": {n}}
	return signed{query: q, body: "<xml><ToUserName><![CDATA[" + testCorpID + "]]></ToUserName><AgentID><![CDATA[1000002]]></AgentID><Encrypt><![CDATA[" + enc + "]]></Encrypt></xml>"}
}

// post sends a signed POST and returns the status and body.
func (r *rig) post(s signed) (int, string) {
	r.t.Helper()
	return r.do(http.MethodPost, s.query, strings.NewReader(s.body))
}

// send encrypts msg now and posts it.
func (r *rig) send(msg string) (int, string) {
	r.t.Helper()
	return r.post(seal(r.t, r.wecom, msg, time.Now().Unix()))
}

func (r *rig) do(method string, q url.Values, body io.Reader) (int, string) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.srv.URL+"/callback?"+q.Encode(), body)
	if err != nil {
		r.t.Fatal(err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// textXML is a text message as WeCom sends it.
func textXML(msgID, content string) string {
	return `<xml><ToUserName><![CDATA[` + testCorpID + `]]></ToUserName><FromUserName><![CDATA[zhangsan]]></FromUserName><CreateTime>1700000000</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[` + content + `]]></Content><MsgId>` + msgID + `</MsgId><AgentID>1000002</AgentID></xml>`
}

// contactXML is a change_contact update_user event as WeCom sends it.
func contactXML(userID string, created int64) string {
	return `<xml><ToUserName><![CDATA[` + testCorpID + `]]></ToUserName><FromUserName><![CDATA[sys]]></FromUserName><CreateTime>` + strconv.FormatInt(created, 10) + `</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[change_contact]]></Event><ChangeType>update_user</ChangeType><UserID><![CDATA[` + userID + `]]></UserID><Position><![CDATA[engineer]]></Position></xml>`
}

// collector records the events delivered to it.
type collector[E callback.Event] struct {
	mu  sync.Mutex
	got []E
}

func (c *collector[E]) handle(_ context.Context, e E) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, e)
	return nil
}

func (c *collector[E]) all() []E {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]E(nil), c.got...)
}

// newServer serves h for the test.
func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newLogger logs everything to buf.
func newLogger(buf *logBuf) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
