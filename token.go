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

// Delete implements TokenStore.
func (s *MemoryTokenStore) Delete(_ context.Context, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[key]; ok && t.Value == value {
		delete(s.tokens, key)
	}
	return nil
}
