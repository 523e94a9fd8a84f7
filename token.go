package wecom

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Token is an access token and when it stops being valid.
type Token struct {
	Value     string
	ExpiresAt time.Time
}

// ErrNoToken is returned by TokenStore.Get when no token is stored.
var ErrNoToken = errors.New("wecom: no token stored")

// TokenStore holds access tokens where several clients, or several processes,
// can share them. Keys name a (corp, app) and hold a hash of the app's secret,
// never the secret. Implementations are safe for concurrent use.
type TokenStore interface {
	// Get returns the token stored under key, or ErrNoToken.
	Get(ctx context.Context, key string) (Token, error)
	// Set stores t under key until t expires.
	Set(ctx context.Context, key string, t Token) error
	// Delete removes the token under key only if its value is still value, so
	// that a token found invalid never removes a newer one.
	Delete(ctx context.Context, key, value string) error
}

// NewerTokenStore is a TokenStore that keeps the newer of two tokens in
// one step: a slow refresher, or a suite_ticket arriving late, never writes
// an older value over a newer one, in one process or across a fleet.
// MemoryTokenStore and redisstore.TokenStore implement it; the client
// asks a store that does not for the stored token first, which a fleet
// writing at the same moment may race.
type NewerTokenStore interface {
	TokenStore
	// SetNewer stores t under key unless the token stored there expires
	// as late as t or later, and reports whether it stored t.
	SetNewer(ctx context.Context, key string, t Token) (bool, error)
}

// setNewer stores t under key in s unless a token expiring as late or later
// is there, and reports whether it stored t.
func setNewer(ctx context.Context, s TokenStore, key string, t Token) (bool, error) {
	if n, ok := s.(NewerTokenStore); ok {
		return n.SetNewer(ctx, key, t)
	}
	cur, err := s.Get(ctx, key)
	switch {
	case err == nil && !cur.ExpiresAt.Before(t.ExpiresAt):
		return false, nil
	case err != nil && !errors.Is(err, ErrNoToken):
		return false, err
	}
	return true, s.Set(ctx, key, t)
}

// TokenSource hands out access tokens from somewhere other than gettoken,
// such as a central token service. The client still caches what it returns
// and asks again when WeCom rejects a token.
type TokenSource interface {
	Token(ctx context.Context) (Token, error)
}

// TokenSourceFunc adapts a function to TokenSource.
type TokenSourceFunc func(ctx context.Context) (Token, error)

// Token calls f.
func (f TokenSourceFunc) Token(ctx context.Context) (Token, error) { return f(ctx) }

// MemoryTokenStore is an in-process TokenStore. The zero value is not usable;
// call NewMemoryTokenStore.
type MemoryTokenStore struct {
	mu     sync.Mutex
	tokens map[string]Token
}

// NewMemoryTokenStore returns an empty store.
func NewMemoryTokenStore() *MemoryTokenStore {
	return &MemoryTokenStore{tokens: make(map[string]Token)}
}

// Get implements TokenStore.
func (s *MemoryTokenStore) Get(_ context.Context, key string) (Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[key]
	if !ok || !time.Now().Before(t.ExpiresAt) {
		delete(s.tokens, key)
		return Token{}, ErrNoToken
	}
	return t, nil
}

// Set implements TokenStore.
func (s *MemoryTokenStore) Set(_ context.Context, key string, t Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[key] = t
	return nil
}

// SetNewer implements NewerTokenStore.
func (s *MemoryTokenStore) SetNewer(_ context.Context, key string, t Token) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.tokens[key]; ok && time.Now().Before(cur.ExpiresAt) && !cur.ExpiresAt.Before(t.ExpiresAt) {
		return false, nil
	}
	s.tokens[key] = t
	return true, nil
}

// Delete implements TokenStore.
func (s *MemoryTokenStore) Delete(_ context.Context, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[key]; ok && t.Value == value {
		delete(s.tokens, key)
	}
	return nil
}
