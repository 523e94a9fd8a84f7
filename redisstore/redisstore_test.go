package redisstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/internal/redistest"
	"github.com/wecomkit/wecom/mock"
	"github.com/wecomkit/wecom/redisstore"
	"github.com/wecomkit/wecom/throttle"
)

// redisBackends are the Redis deployments every RedisTokenStore test runs on.
var redisBackends = []struct {
	name    string
	connect func(testing.TB) redis.UniversalClient
}{
	{"single", redistest.Single},
	{"cluster", redistest.Cluster},
}

// tokenKey is shaped like the client's keys: a hash tag on the corp, then a
// hash of the secret.
const tokenKey = "wecom:token:{wwcorp}:0123456789abcdef"

// newRedisStore returns a store on rdb under a prefix of the test's own,
// and that prefix.
func newRedisStore(t *testing.T, rdb redis.UniversalClient) (*redisstore.TokenStore, string) {
	t.Helper()
	prefix := redistest.Prefix(t, rdb)
	s, err := redisstore.New(rdb, prefix)
	if err != nil {
		t.Fatalf("NewRedisTokenStore: %v", err)
	}
	return s, prefix
}

func TestRedisTokenStoreRejectsNilClient(t *testing.T) {
	t.Parallel()
	s, err := redisstore.New(nil, "p:")
	var ve *wecom.ValidationError
	if s != nil || !errors.As(err, &ve) || !errors.Is(err, wecom.ErrInvalidRequest) {
		t.Fatalf("NewRedisTokenStore(nil) = %v, %v; want a *ValidationError", s, err)
	}
}

func TestRedisTokenStore(t *testing.T) {
	t.Parallel()
	for _, b := range redisBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			rdb := b.connect(t)

			t.Run("RoundTrip", func(t *testing.T) {
				t.Parallel()
				s, prefix := newRedisStore(t, rdb)
				ctx := t.Context()
				want := wecom.Token{Value: "TOKEN-round-trip", ExpiresAt: time.Now().Add(2 * time.Hour).Truncate(time.Millisecond)}
				if err := s.Set(ctx, tokenKey, want); err != nil {
					t.Fatalf("Set: %v", err)
				}
				got, err := s.Get(ctx, tokenKey)
				if err != nil || got.Value != want.Value || !got.ExpiresAt.Equal(want.ExpiresAt) {
					t.Fatalf("Get = %+v, %v; want %+v", got, err, want)
				}
				// Another store on the same Redis and prefix sees it; one on
				// another prefix does not.
				same, _ := redisstore.New(rdb, prefix)
				if got, err := same.Get(ctx, tokenKey); err != nil || got.Value != want.Value {
					t.Errorf("another store on the same prefix: Get = %+v, %v", got, err)
				}
				other, _ := newRedisStore(t, rdb)
				if _, err := other.Get(ctx, tokenKey); !errors.Is(err, wecom.ErrNoToken) {
					t.Errorf("a store on another prefix: Get = %v, want ErrNoToken", err)
				}
			})

			t.Run("Missing", func(t *testing.T) {
				t.Parallel()
				s, _ := newRedisStore(t, rdb)
				if _, err := s.Get(t.Context(), tokenKey); !errors.Is(err, wecom.ErrNoToken) {
					t.Fatalf("Get of a missing key = %v, want ErrNoToken", err)
				}
			})

			t.Run("ExpiresWithToken", func(t *testing.T) {
				t.Parallel()
				s, prefix := newRedisStore(t, rdb)
				ctx := t.Context()
				life := 1500 * time.Millisecond
				if err := s.Set(ctx, tokenKey, wecom.Token{Value: "TOKEN-short", ExpiresAt: time.Now().Add(life)}); err != nil {
					t.Fatalf("Set: %v", err)
				}
				pttl, err := rdb.PTTL(ctx, prefix+tokenKey).Result()
				if err != nil || pttl <= 0 || pttl > life {
					t.Fatalf("PTTL = %v, %v; want in (0, %v]", pttl, err, life)
				}
			})

			t.Run("ExpiredEntryIsNoToken", func(t *testing.T) {
				t.Parallel()
				s, prefix := newRedisStore(t, rdb)
				ctx := t.Context()
				// Still in Redis, but past the expiry it records.
				past := time.Now().Add(-time.Second).UnixMilli()
				raw := `{"v":"TOKEN-stale","e":` + strconv.FormatInt(past, 10) + `}`
				if err := rdb.Set(ctx, prefix+tokenKey, raw, time.Hour).Err(); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Get(ctx, tokenKey); !errors.Is(err, wecom.ErrNoToken) {
					t.Fatalf("Get of an expired entry = %v, want ErrNoToken", err)
				}
			})

			t.Run("SetExpiredStoresNothing", func(t *testing.T) {
				t.Parallel()
				s, prefix := newRedisStore(t, rdb)
				ctx := t.Context()
				if err := s.Set(ctx, tokenKey, wecom.Token{Value: "TOKEN-gone", ExpiresAt: time.Now().Add(-time.Millisecond)}); err != nil {
					t.Fatalf("Set of an expired token: %v", err)
				}
				if n, err := rdb.Exists(ctx, prefix+tokenKey).Result(); err != nil || n != 0 {
					t.Fatalf("an expired token was stored: exists = %d, %v", n, err)
				}
				good := wecom.Token{Value: "TOKEN-good", ExpiresAt: time.Now().Add(time.Hour)}
				if err := s.Set(ctx, tokenKey, good); err != nil {
					t.Fatal(err)
				}
				if err := s.Set(ctx, tokenKey, wecom.Token{Value: "TOKEN-gone", ExpiresAt: time.Now().Add(-time.Second)}); err != nil {
					t.Fatal(err)
				}
				if got, err := s.Get(ctx, tokenKey); err != nil || got.Value != good.Value {
					t.Fatalf("Set of an expired token replaced the stored one: Get = %+v, %v", got, err)
				}
				if err := s.Set(ctx, tokenKey, wecom.Token{ExpiresAt: time.Now().Add(time.Hour)}); !errors.Is(err, wecom.ErrInvalidRequest) {
					t.Fatalf("Set of an empty token = %v, want ErrInvalidRequest", err)
				}
			})

			t.Run("CompareAndDelete", func(t *testing.T) {
				t.Parallel()
				s, _ := newRedisStore(t, rdb)
				ctx := t.Context()
				exp := time.Now().Add(time.Hour)
				if err := s.Delete(ctx, tokenKey, "TOKEN-none"); err != nil {
					t.Fatalf("Delete of a missing key: %v", err)
				}
				if err := s.Set(ctx, tokenKey, wecom.Token{Value: "TOKEN-old", ExpiresAt: exp}); err != nil {
					t.Fatal(err)
				}
				// Another process already stored a newer token: deleting
				// the refused old one must keep it.
				newer := wecom.Token{Value: "TOKEN-new", ExpiresAt: exp.Add(time.Minute)}
				if err := s.Set(ctx, tokenKey, newer); err != nil {
					t.Fatal(err)
				}
				if err := s.Delete(ctx, tokenKey, "TOKEN-old"); err != nil {
					t.Fatalf("Delete: %v", err)
				}
				if got, err := s.Get(ctx, tokenKey); err != nil || got.Value != newer.Value {
					t.Fatalf("after deleting the old token, Get = %+v, %v; want the newer one kept", got, err)
				}
				if err := s.Delete(ctx, tokenKey, newer.Value); err != nil {
					t.Fatalf("Delete: %v", err)
				}
				if _, err := s.Get(ctx, tokenKey); !errors.Is(err, wecom.ErrNoToken) {
					t.Fatalf("after deleting the stored token, Get = %v, want ErrNoToken", err)
				}
			})

			t.Run("SharedByClients", func(t *testing.T) {
				t.Parallel()
				s, _ := newRedisStore(t, rdb)
				testOneGetTokenForManyClients(t, s)
			})
		})
	}
}

// testOneGetTokenForManyClients starts 20 clients on one cold store and one
// limiter, each listing tags at once: only one of them calls gettoken, and
// the token is stored under the corp and a hash of the secret.
func testOneGetTokenForManyClients(t *testing.T, store wecom.TokenStore) {
	t.Helper()
	const corp, secret, base, clients = "wwredis", "redis-secret", "https://wecom.test", 20
	m, err := mock.New(mock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.AddApp(corp, secret)
	mt := httpmock.NewMockTransport()
	m.Register(mt, base)
	limiter := throttle.NewMemory()

	start := make(chan struct{})
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for range clients {
		c, err := wecom.New(corp, secret,
			wecom.WithTokenStore(store), wecom.WithLimiter(limiter),
			wecom.WithBaseURL(base), wecom.WithTransport(mt))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		wg.Go(func() {
			<-start
			_, err := c.Tags.List(t.Context())
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Tags.List: %v", err)
		}
	}
	st := m.Stats()
	if st.GetTokenCalls != 1 {
		t.Errorf("gettoken called %d times by %d clients on one store, want 1", st.GetTokenCalls, clients)
	}
	if st.Calls["/cgi-bin/tag/list"] != clients {
		t.Errorf("tag/list called %d times, want %d", st.Calls["/cgi-bin/tag/list"], clients)
	}
	sum := sha256.Sum256([]byte(corp + "\x00" + secret))
	key := "wecom:token:{" + corp + "}:" + hex.EncodeToString(sum[:8])
	if tok, err := store.Get(t.Context(), key); err != nil || tok.Value == "" {
		t.Errorf("store.Get(%q) = %+v, %v; want the fetched token", key, tok, err)
	}
}

// Delete works after the script cache was flushed (EVALSHA falls back to
// EVAL), and errors from an unreachable Redis name the operation but never
// the token.
func TestRedisTokenStoreScriptFlushAndDownRedis(t *testing.T) {
	t.Parallel()
	addr, _, stop := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := redisstore.New(rdb, "p:")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const tok = "TOKEN-must-not-leak-redis"
	if err := s.Set(ctx, tokenKey, wecom.Token{Value: tok, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, tokenKey, "TOKEN-other"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, tokenKey, tok); err != nil {
		t.Fatalf("Delete after SCRIPT FLUSH: %v", err)
	}
	if _, err := s.Get(ctx, tokenKey); !errors.Is(err, wecom.ErrNoToken) {
		t.Fatalf("Get after Delete = %v, want ErrNoToken", err)
	}

	// An entry that is not ours: an error, without its content.
	if err := rdb.Set(ctx, "p:"+tokenKey, tok+"-not-json", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, tokenKey); err == nil || errors.Is(err, wecom.ErrNoToken) || strings.Contains(err.Error(), "TOKEN-") {
		t.Errorf("Get of a malformed entry = %v; want an error without the entry", err)
	}

	stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for op, err := range map[string]error{
		"get":    func() error { _, err := s.Get(ctx, tokenKey); return err }(),
		"set":    s.Set(ctx, tokenKey, wecom.Token{Value: tok, ExpiresAt: time.Now().Add(time.Hour)}),
		"delete": s.Delete(ctx, tokenKey, tok),
	} {
		if err == nil || errors.Is(err, wecom.ErrNoToken) {
			t.Errorf("%s on a stopped Redis = %v, want an error", op, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "wecom: token store "+op+": ") || strings.Contains(err.Error(), "TOKEN-") {
			t.Errorf("%s on a stopped Redis: %q; want the operation named and no token", op, err)
		}
	}
}
