package callback_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// BenchmarkServeCallback measures one callback verified, decrypted,
// parsed and dispatched, without the network: an add_external_contact
// event through the whole Handler, the deduper one that forgets at once
// (every iteration is delivered; MemoryDeduper's own cost is
// BenchmarkMemoryDeduper's).
func BenchmarkServeCallback(b *testing.B) {
	now := time.Now().Unix()
	benchServe(b, func(i int) string {
		return `<xml><ToUserName><![CDATA[` + testCorpID + `]]></ToUserName><FromUserName><![CDATA[sys]]></FromUserName><CreateTime>` + strconv.FormatInt(now, 10) + `</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[change_external_contact]]></Event><ChangeType><![CDATA[add_external_contact]]></ChangeType><UserID><![CDATA[zhangsan]]></UserID><ExternalUserID><![CDATA[wm` + strconv.Itoa(i) + `]]></ExternalUserID><State><![CDATA[s]]></State><WelcomeCode><![CDATA[WELCOMECODE]]></WelcomeCode></xml>`
	}, func(h *callback.Handler, delivered *int) {
		callback.Handle(h, func(_ context.Context, e *callback.ExternalContactEvent) error {
			*delivered++ // in line: ServeHTTP returns after the handler
			return nil
		})
	})
}

// BenchmarkServeText is BenchmarkServeCallback for a text message, whose
// dedupe key is its MsgId.
func BenchmarkServeText(b *testing.B) {
	benchServe(b, func(i int) string {
		return textXML(strconv.Itoa(1_000_000+i), "hello, how are you today?")
	}, func(h *callback.Handler, delivered *int) {
		callback.Handle(h, func(_ context.Context, e *callback.TextMessage) error {
			*delivered++
			return nil
		})
	})
}

// benchServe posts 4,096 distinct callbacks (msg(i)) round and round to a
// Handler whose only handler register installs, and checks each was
// delivered.
func benchServe(b *testing.B, msg func(i int) string, register func(h *callback.Handler, delivered *int)) {
	c, err := callback.NewCrypto(testToken, testKey, testCorpID)
	if err != nil {
		b.Fatal(err)
	}
	h, err := callback.NewHandler(c, callback.WithDeduper(forgetful{}, 0))
	if err != nil {
		b.Fatal(err)
	}
	var delivered int
	register(h, &delivered)
	const distinct = 4096
	reqs := make([]signed, distinct)
	now := time.Now().Unix()
	for i := range reqs {
		reqs[i] = seal(b, c, msg(i), now)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s := reqs[i%distinct]
		req := httptest.NewRequest(http.MethodPost, "/?"+s.query.Encode(), strings.NewReader(s.body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
	b.StopTimer()
	if delivered != b.N {
		b.Fatalf("delivered %d of %d", delivered, b.N)
	}
}

// forgetful is a Deduper that remembers nothing.
type forgetful struct{}

func (forgetful) Seen(context.Context, string, time.Duration) (bool, error) { return false, nil }
func (forgetful) Forget(context.Context, string) error                      { return nil }

func BenchmarkMemoryDeduper(b *testing.B) {
	d := mustMemory(b, callback.DefaultDedupeCapacity)
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = "xml:" + strconv.Itoa(i)
	}
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		_, _ = d.Seen(ctx, keys[i%len(keys)], time.Minute)
	}
}

func mustMemory(b *testing.B, capacity int) *callback.MemoryDeduper {
	d, err := callback.NewMemoryDeduper(capacity)
	if err != nil {
		b.Fatal(err)
	}
	return d
}
