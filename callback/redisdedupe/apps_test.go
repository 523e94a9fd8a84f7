package redisdedupe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/callback/redisdedupe"
	"github.com/wecomkit/wecom/internal/redistest"
)

// TestTwoAppsOneRedis: two apps of one corp (two callback URLs, one
// process, one Redis and one Deduper): the change_contact WeCom sends to
// both reaches both.
func TestTwoAppsOneRedis(t *testing.T) {
	rdb := redistest.Single(t)
	d, err := redisdedupe.New(rdb, redistest.Prefix(t, rdb))
	if err != nil {
		t.Fatal(err)
	}
	const corp = "ww0123456789abcdef"
	key := strings.Repeat("k", 42) + "A"
	ev := `<xml><ToUserName><![CDATA[` + corp + `]]></ToUserName><FromUserName><![CDATA[sys]]></FromUserName><CreateTime>` + strconv.FormatInt(time.Now().Unix(), 10) + `</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[change_contact]]></Event><ChangeType><![CDATA[delete_user]]></ChangeType><UserID><![CDATA[lisi]]></UserID></xml>`
	var got [2]atomic.Int32
	for i, tok := range []string{"tokenOfAppA", "tokenOfAppB"} {
		c, _ := callback.NewCrypto(tok, key, corp)
		h, err := callback.NewHandler(c, callback.WithDeduper(d, 0))
		if err != nil {
			t.Fatal(err)
		}
		callback.Handle(h, func(context.Context, *callback.ContactEvent) error { got[i].Add(1); return nil })
		enc, _ := c.Encrypt([]byte(ev))
		ts, n := strconv.FormatInt(time.Now().Unix(), 10), "1"
		q := url.Values{"msg_signature": {c.Sign(ts, n, enc)}, "timestamp": {ts}, "nonce": {n}}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/?"+q.Encode(), strings.NewReader("<xml><Encrypt><![CDATA["+enc+"]]></Encrypt></xml>")))
		if rec.Code != http.StatusOK {
			t.Fatalf("app %d: status %d", i, rec.Code)
		}
	}
	if got[0].Load() != 1 || got[1].Load() != 1 {
		t.Fatalf("app A delivered %d, app B delivered %d", got[0].Load(), got[1].Load())
	}
}
