package wecom

import (
	"context"
	"testing"
	"time"
)

// The memory store never writes an older token over a newer one.
func TestMemoryTokenStoreSetNewer(t *testing.T) {
	t.Parallel()
	s := NewMemoryTokenStore()
	now := time.Now()
	newer, older := Token{Value: "newer", ExpiresAt: now.Add(2 * time.Hour)}, Token{Value: "older", ExpiresAt: now.Add(time.Hour)}
	for _, step := range []struct {
		t    Token
		want bool
	}{{older, true}, {newer, true}, {older, false}, {newer, false}} {
		if stored, err := s.SetNewer(context.Background(), "k", step.t); err != nil || stored != step.want {
			t.Errorf("SetNewer(%s) = %t, %v; want %t", step.t.Value, stored, err, step.want)
		}
	}
	if got, _ := s.Get(context.Background(), "k"); got.Value != "newer" {
		t.Errorf("Get = %v, want the newer token", got)
	}
}

// A slow refresher whose token is older than the one another process
// stored meanwhile leaves that one in the store, and uses it: on a store
// that keeps the newer itself, and on one that does not (Get, then Set).
func TestSlowRefresherKeepsTheNewerToken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store TokenStore
	}{
		{"newer store", NewMemoryTokenStore()},
		{"plain store", plainStore{NewMemoryTokenStore()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			newer := Token{Value: "newer-from-another-process", ExpiresAt: now.Add(2 * time.Hour)}
			var key string
			source := TokenSourceFunc(func(ctx context.Context) (Token, error) {
				// Another process finishes first, with a newer token.
				if err := tc.store.Set(ctx, key, newer); err != nil {
					return Token{}, err
				}
				return Token{Value: "older-from-this-one", ExpiresAt: now.Add(time.Hour)}, nil
			})
			f := setup(t, WithTokenSource(source), WithAgentID(1), WithTokenStore(tc.store))
			key = f.c.p.corp().key
			got, err := f.c.p.corp().token(context.Background())
			if err != nil || got != newer.Value {
				t.Errorf("token = %q, %v; want the newer one", got, err)
			}
			if st, _ := tc.store.Get(context.Background(), key); st.Value != newer.Value {
				t.Errorf("store holds %q, want the newer token", st.Value)
			}
		})
	}
}

// plainStore is a TokenStore without SetNewer.
type plainStore struct{ s *MemoryTokenStore }

func (p plainStore) Get(ctx context.Context, key string) (Token, error) { return p.s.Get(ctx, key) }
func (p plainStore) Set(ctx context.Context, key string, t Token) error { return p.s.Set(ctx, key, t) }
func (p plainStore) Delete(ctx context.Context, key, value string) error {
	return p.s.Delete(ctx, key, value)
}
