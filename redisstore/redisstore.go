// Package redisstore keeps in Redis the wecom client's credentials, shared
// by every process of a fleet: give its TokenStore to wecom.WithTokenStore.
// A program that keeps them in memory does not import it, nor go-redis.
// The callbacks already delivered are kept by callback/redisdedupe.
package redisstore

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/wecomkit/wecom"
)

//go:embed token_delete.lua
var tokenDeleteLua string

//go:embed token_set_newer.lua
var tokenSetNewerLua string

// TokenStore is a wecom.TokenStore on Redis, shared by every process using the
// same Redis and prefix. It works with a single node, Sentinel and Cluster
// alike: every operation touches one key.
//
// A token is stored under prefix+key as the JSON {"v": token, "e": expiry in
// Unix milliseconds} and expires in Redis with the token. The key names a
// corp and a hash of the app's secret, never the secret; errors never hold
// the token. A TokenStore is safe for concurrent use.
type TokenStore struct {
	rdb      redis.UniversalClient
	prefix   string
	del      *redis.Script
	setNewer *redis.Script
}

// redisToken is the stored form of a Token.
type redisToken struct {
	Value     string `json:"v"`
	ExpiresAt int64  `json:"e"` // Unix ms
}

// New returns a store keeping tokens in rdb under keys starting
// with prefix, which may be empty and lets deployments share one Redis without
// sharing tokens. The caller keeps ownership of rdb.
func New(rdb redis.UniversalClient, prefix string) (*TokenStore, error) {
	if rdb == nil {
		return nil, &wecom.ValidationError{Field: "redis token store", Reason: "nil redis client"}
	}
	return &TokenStore{rdb: rdb, prefix: prefix, del: redis.NewScript(tokenDeleteLua), setNewer: redis.NewScript(tokenSetNewerLua)}, nil
}

// Get implements wecom.TokenStore. A token whose expiry has passed is wecom.ErrNoToken,
// even if Redis still holds it.
func (s *TokenStore) Get(ctx context.Context, key string) (wecom.Token, error) {
	raw, err := s.rdb.Get(ctx, s.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return wecom.Token{}, wecom.ErrNoToken
	}
	if err != nil {
		return wecom.Token{}, fmt.Errorf("wecom: token store get: %w", err)
	}
	var e redisToken
	// The decoding error is not wrapped: it may quote the token.
	if json.Unmarshal(raw, &e) != nil || e.Value == "" {
		return wecom.Token{}, errors.New("wecom: token store get: stored entry is not a token")
	}
	t := wecom.Token{Value: e.Value, ExpiresAt: time.UnixMilli(e.ExpiresAt)}
	if !time.Now().Before(t.ExpiresAt) {
		return wecom.Token{}, wecom.ErrNoToken
	}
	return t, nil
}

// Set implements wecom.TokenStore. An already expired token is not stored (and
// the stored one, if any, is left alone); an empty one is a
// *ValidationError.
func (s *TokenStore) Set(ctx context.Context, key string, t wecom.Token) error {
	raw, ttl, err := entry(t)
	if err != nil || ttl <= 0 {
		return err
	}
	if err := s.rdb.Set(ctx, s.prefix+key, raw, ttl).Err(); err != nil {
		return fmt.Errorf("wecom: token store set: %w", err)
	}
	return nil
}

// SetNewer implements wecom.NewerTokenStore: one script, in one round
// trip, stores t unless the entry holds a token expiring as late or later.
// An already expired token is not stored.
func (s *TokenStore) SetNewer(ctx context.Context, key string, t wecom.Token) (bool, error) {
	raw, ttl, err := entry(t)
	if err != nil || ttl <= 0 {
		return false, err
	}
	n, err := s.setNewer.Run(ctx, s.rdb, []string{s.prefix + key}, raw, t.ExpiresAt.UnixMilli(), ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("wecom: token store set: %w", err)
	}
	return n == 1, nil
}

// entry returns the stored form of t and how long Redis keeps it (not
// positive: t has expired).
func entry(t wecom.Token) ([]byte, time.Duration, error) {
	if t.Value == "" {
		return nil, 0, &wecom.ValidationError{Field: "token", Reason: "empty value"}
	}
	ttl := time.Until(t.ExpiresAt)
	if ttl <= 0 {
		return nil, 0, nil
	}
	// Redis counts whole milliseconds; round up so that a token in its last
	// millisecond is not stored without expiry. Get checks the exact expiry.
	if r := ttl % time.Millisecond; r != 0 {
		ttl += time.Millisecond - r
	}
	raw, err := json.Marshal(redisToken{Value: t.Value, ExpiresAt: t.ExpiresAt.UnixMilli()})
	if err != nil {
		return nil, 0, fmt.Errorf("wecom: token store set: encoding: %w", err)
	}
	return raw, ttl, nil
}

// Delete implements TokenStore: one script, in one round trip, deletes the
// entry only if it still holds value.
func (s *TokenStore) Delete(ctx context.Context, key, value string) error {
	if err := s.del.Run(ctx, s.rdb, []string{s.prefix + key}, value).Err(); err != nil {
		return fmt.Errorf("wecom: token store delete: %w", err)
	}
	return nil
}
