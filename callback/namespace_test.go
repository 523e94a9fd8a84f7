package callback_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wecomkit/wecom/callback"
)

// TestSharedDeduperKeepsAppsApart: two apps of one corp (two Handlers,
// one Deduper) both get the change_contact event WeCom sends to each;
// replicas of one app (same token and key) still share their keys, and
// explicit namespaces keep Handlers apart or together as named.
func TestSharedDeduperKeepsAppsApart(t *testing.T) {
	t.Parallel()
	const otherToken = "tokenOfAppB"
	for name, tc := range map[string]struct {
		tokenB     string
		optA, optB []callback.Option
		want       int32 // deliveries of the one event in all
	}{
		"two apps":                  {tokenB: otherToken, want: 2},
		"two replicas of one app":   {tokenB: testToken, want: 1},
		"named apart":               {tokenB: testToken, optA: ns("a"), optB: ns("b"), want: 2},
		"named alike across tokens": {tokenB: otherToken, optA: ns("app"), optB: ns("app"), want: 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			shared, _ := callback.NewMemoryDeduper(100)
			var n atomic.Int32
			ev := contactXML("zhangsan", time.Now().Unix())
			for _, side := range []struct {
				token string
				opts  []callback.Option
			}{{testToken, tc.optA}, {tc.tokenB, tc.optB}} {
				c, _ := callback.NewCrypto(side.token, testKey, testCorpID)
				h, err := callback.NewHandler(c, append([]callback.Option{callback.WithDeduper(shared, 0)}, side.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				callback.Handle(h, func(context.Context, *callback.ContactEvent) error { n.Add(1); return nil })
				if rec := serve(h, seal(t, c, ev, time.Now().Unix())); rec.Code != http.StatusOK {
					t.Fatalf("status %d", rec.Code)
				}
			}
			if n.Load() != tc.want {
				t.Fatalf("delivered %d times, want %d", n.Load(), tc.want)
			}
		})
	}
}

func ns(name string) []callback.Option { return []callback.Option{callback.WithDedupeNamespace(name)} }

// recordingDeduper records the keys it is asked about.
type recordingDeduper struct{ keys chan string }

func (d recordingDeduper) Seen(_ context.Context, k string, _ time.Duration) (bool, error) {
	d.keys <- k
	return false, nil
}
func (recordingDeduper) Forget(context.Context, string) error { return nil }

// TestDedupeKeyHoldsNoSecret: the default namespace is a short hash; the
// token and the key appear nowhere in a deduper key, nor, for an event
// (whose key is a hash of its XML), the receive id. A message's key names
// its corp and MsgId, which are not secrets.
func TestDedupeKeyHoldsNoSecret(t *testing.T) {
	t.Parallel()
	d := recordingDeduper{keys: make(chan string, 1)}
	c, _ := callback.NewCrypto(testToken, testKey, testCorpID)
	h, err := callback.NewHandler(c, callback.WithDeduper(d, 0))
	if err != nil {
		t.Fatal(err)
	}
	callback.Handle(h, func(context.Context, *callback.ContactEvent) error { return nil })
	serve(h, seal(t, c, contactXML("zhangsan", time.Now().Unix()), time.Now().Unix()))
	key := <-d.keys
	ns, _, _ := strings.Cut(key, ":")
	if len(ns) != 12 || strings.Contains(key, testToken) || strings.Contains(key, testKey) || strings.Contains(key, testCorpID) {
		t.Fatalf("key %q", key)
	}
	if _, err := callback.NewHandler(c, callback.WithDedupeNamespace("")); !errors.Is(err, callback.ErrConfig) {
		t.Fatalf("empty namespace: %v", err)
	}
}
