package callback_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wecomkit/wecom/callback"
)

func TestMemoryDeduperExpires(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		d, err := callback.NewMemoryDeduper(10)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		seen := func(key string) bool {
			s, err := d.Seen(ctx, key, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		if seen("a") || !seen("a") {
			t.Fatal("a: want new, then seen")
		}
		time.Sleep(59 * time.Second)
		if !seen("a") {
			t.Fatal("a forgotten before its ttl")
		}
		time.Sleep(time.Second)
		if seen("a") {
			t.Fatal("a remembered past its ttl")
		}
		if err := d.Forget(ctx, "a"); err != nil || seen("a") {
			t.Fatal("a remembered after Forget")
		}
		if s, _ := d.Seen(ctx, "zero", 0); s || d.Len() != 1 {
			t.Fatalf("a ttl of 0 recorded something: len %d", d.Len())
		}
	})
}

func TestMemoryDeduperBounded(t *testing.T) {
	t.Parallel()
	d, err := callback.NewMemoryDeduper(100)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i := range 10_000 {
		if s, _ := d.Seen(ctx, strconv.Itoa(i), time.Hour); s {
			t.Fatalf("%d seen", i)
		}
		if d.Len() > 100 {
			t.Fatalf("holds %d keys, capacity 100", d.Len())
		}
	}
	// The newest are kept, the oldest dropped.
	if s, _ := d.Seen(ctx, "9999", time.Hour); !s {
		t.Fatal("newest key dropped")
	}
	if s, _ := d.Seen(ctx, "0", time.Hour); s {
		t.Fatal("oldest key kept past capacity")
	}
	if _, err := callback.NewMemoryDeduper(0); !errors.Is(err, callback.ErrConfig) {
		t.Fatalf("capacity 0: %v", err)
	}
}

// TestMemoryDeduperConcurrent: of many concurrent Seen of one key, one is new.
func TestMemoryDeduperConcurrent(t *testing.T) {
	t.Parallel()
	d, _ := callback.NewMemoryDeduper(1000)
	var fresh atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if s, _ := d.Seen(t.Context(), "k", time.Minute); !s {
				fresh.Add(1)
			}
		})
	}
	wg.Wait()
	if fresh.Load() != 1 {
		t.Fatalf("%d calls saw the key as new, want 1", fresh.Load())
	}
}

// FuzzHandler posts arbitrary query values and bodies: never a panic,
// never a 500.
func FuzzHandler(f *testing.F) {
	c, err := callback.NewCrypto(testToken, testKey, testCorpID)
	if err != nil {
		f.Fatal(err)
	}
	h, err := callback.NewHandler(c, callback.WithTimestampWindow(0))
	if err != nil {
		f.Fatal(err)
	}
	callback.Handle(h, func(context.Context, callback.Event) error { return nil })
	s := seal(f, c, textXML("1", "x"), 1700000000)
	f.Add(s.query.Get("msg_signature"), s.query.Get("timestamp"), s.query.Get("nonce"), s.body, true)
	f.Add("", "", "", "", false)
	f.Fuzz(func(t *testing.T, sig, ts, nonce, body string, sign bool) {
		if sign { // reach past the signature: sign what the body holds
			var env struct{ Encrypt string }
			_ = xmlUnmarshal([]byte(body), &env)
			sig = c.Sign(ts, nonce, env.Encrypt)
		}
		q := url.Values{"msg_signature": {sig}, "timestamp": {ts}, "nonce": {nonce}, "echostr": {body}}
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			req := httptest.NewRequest(method, "/?"+q.Encode(), strings.NewReader(body))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s answered %d", method, rec.Code)
			}
		}
	})
}
