package redisdedupe_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/callback/redisdedupe"
	"github.com/wecomkit/wecom/internal/redistest"
)

// redisBackends are the Redis deployments every test runs on.
var redisBackends = []struct {
	name    string
	connect func(testing.TB) redis.UniversalClient
}{
	{"single", redistest.Single},
	{"cluster", redistest.Cluster},
}

func TestDeduperRejectsNilClient(t *testing.T) {
	t.Parallel()
	d, err := redisdedupe.New(nil, "p:")
	if d != nil || !errors.Is(err, callback.ErrConfig) {
		t.Fatalf("New(nil) = %v, %v", d, err)
	}
}

func TestDeduper(t *testing.T) {
	t.Parallel()
	for _, b := range redisBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			rdb := b.connect(t)
			prefix := redistest.Prefix(t, rdb)
			d, err := redisdedupe.New(rdb, prefix)
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			if seen, err := d.Seen(ctx, "k1", time.Minute); err != nil || seen {
				t.Fatalf("first Seen = %v, %v", seen, err)
			}
			if seen, err := d.Seen(ctx, "k1", time.Minute); err != nil || !seen {
				t.Fatalf("second Seen = %v, %v", seen, err)
			}
			if pttl := rdb.PTTL(ctx, prefix+"k1").Val(); pttl <= 0 || pttl > time.Minute {
				t.Fatalf("PTTL %v, want in (0, 1m]", pttl)
			}
			if err := d.Forget(ctx, "k1"); err != nil {
				t.Fatal(err)
			}
			if seen, _ := d.Seen(ctx, "k1", 0); seen {
				t.Fatal("seen after Forget")
			}
			if rdb.Exists(ctx, prefix+"k1").Val() != 0 {
				t.Fatal("a ttl of 0 recorded the key")
			}
			// Of concurrent Seen of one key, one is new.
			var mu sync.Mutex
			fresh := 0
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					if seen, err := d.Seen(ctx, "k2", time.Minute); err == nil && !seen {
						mu.Lock()
						fresh++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if fresh != 1 {
				t.Fatalf("%d concurrent Seen were new, want 1", fresh)
			}
		})
	}
}

// TestDeduperAcrossHandlers: two replicas behind a load balancer share a
// Redis Deduper; WeCom's first attempt reaches one, its retries the other
// (and the first again), and the event is delivered once; a second event
// in the same second from the same sender is delivered too.
func TestDeduperAcrossHandlers(t *testing.T) {
	t.Parallel()
	for _, b := range redisBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			rdb := b.connect(t)
			prefix := redistest.Prefix(t, rdb)
			const token, key, corp = "tok", "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C", "wwcorp"
			wecom, err := callback.NewCrypto(token, key, corp)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var delivered []string
			var urls []string
			for range 2 {
				c, _ := callback.NewCrypto(token, key, corp)
				d, err := redisdedupe.New(rdb, prefix)
				if err != nil {
					t.Fatal(err)
				}
				h, err := callback.NewHandler(c, callback.WithDeduper(d, 0))
				if err != nil {
					t.Fatal(err)
				}
				callback.Handle(h, func(_ context.Context, e *callback.ContactEvent) error {
					mu.Lock()
					defer mu.Unlock()
					delivered = append(delivered, e.UserID)
					return nil
				})
				srv := httptest.NewServer(h)
				t.Cleanup(srv.Close)
				urls = append(urls, srv.URL)
			}
			now := strconv.FormatInt(time.Now().Unix(), 10)
			event := func(user string) string {
				return `<xml><ToUserName>wwcorp</ToUserName><FromUserName>sys</FromUserName><CreateTime>` + now +
					`</CreateTime><MsgType>event</MsgType><Event>change_contact</Event><ChangeType>update_user</ChangeType><UserID>` + user + `</UserID></xml>`
			}
			post := func(base, msg string, attempt int) {
				t.Helper()
				enc, err := wecom.Encrypt([]byte(msg))
				if err != nil {
					t.Fatal(err)
				}
				nonce := "n" + strconv.Itoa(attempt)
				q := url.Values{"msg_signature": {wecom.Sign(now, nonce, enc)}, "timestamp": {now}, "nonce": {nonce}}
				resp, err := http.Post(base+"/?"+q.Encode(), "text/xml", strings.NewReader("<xml><Encrypt>"+enc+"</Encrypt></xml>"))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d", resp.StatusCode)
				}
			}
			for attempt, base := range []string{urls[0], urls[1], urls[0]} {
				post(base, event("zhangsan"), attempt)
			}
			post(urls[1], event("lisi"), 9)
			mu.Lock()
			defer mu.Unlock()
			if strings.Join(delivered, ",") != "zhangsan,lisi" {
				t.Fatalf("delivered %v, want zhangsan once, then lisi", delivered)
			}
		})
	}
}
