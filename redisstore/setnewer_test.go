package redisstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/wecomkit/wecom"
)

// SetNewer never writes an older token over a newer one, nor an expired
// one at all; of tokens set at once by many writers, the newest stays.
func TestRedisTokenStoreSetNewer(t *testing.T) {
	t.Parallel()
	for _, b := range redisBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newRedisStore(t, b.connect(t))
			ctx := t.Context()
			now := time.Now().Truncate(time.Millisecond)
			newer := wecom.Token{Value: "newer", ExpiresAt: now.Add(2 * time.Hour)}
			older := wecom.Token{Value: "older", ExpiresAt: now.Add(time.Hour)}
			for _, step := range []struct {
				t    wecom.Token
				want bool
			}{
				{older, true}, {newer, true}, {older, false}, {newer, false},
				{wecom.Token{Value: "expired", ExpiresAt: now.Add(-time.Second)}, false},
			} {
				stored, err := s.SetNewer(ctx, tokenKey, step.t)
				if err != nil || stored != step.want {
					t.Errorf("SetNewer(%s) = %t, %v; want %t", step.t.Value, stored, err, step.want)
				}
			}
			if got, err := s.Get(ctx, tokenKey); err != nil || got.Value != "newer" {
				t.Errorf("Get = %v, %v; want the newer token", got, err)
			}
			var wg sync.WaitGroup
			for i := range 20 {
				wg.Go(func() {
					tok := wecom.Token{Value: "race", ExpiresAt: now.Add(3*time.Hour + time.Duration(i)*time.Second)}
					if i == 19 {
						tok.Value = "newest"
					}
					if _, err := s.SetNewer(ctx, "race:"+tokenKey, tok); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if got, err := s.Get(ctx, "race:"+tokenKey); err != nil || got.Value != "newest" {
				t.Errorf("after 20 writers: %v, %v; want the newest", got, err)
			}
		})
	}
}
