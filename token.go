package wecom

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
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

// WithTokenStore sets where tokens are cached (default: a private
// MemoryTokenStore). Clients and processes sharing a store share tokens.
func WithTokenStore(s TokenStore) Option {
	return func(c *Client) error {
		if s == nil {
			return invalid("token store", "nil")
		}
		c.tokens.store = s
		return nil
	}
}

// WithTokenSource makes the client take tokens from src instead of calling
// gettoken. The secret may then be empty.
func WithTokenSource(src TokenSource) Option {
	return func(c *Client) error {
		if src == nil {
			return invalid("token source", "nil")
		}
		c.tokens.source = src
		return nil
	}
}

// WithTokenRefreshAhead sets how long before expiry a token is refreshed
// (default 5 minutes, less a random up to 20% so that processes spread out).
func WithTokenRefreshAhead(d time.Duration) Option {
	return func(c *Client) error {
		if d < 0 {
			return invalid("token refresh ahead", "%s is negative", d)
		}
		c.tokens.refreshAhead = d
		return nil
	}
}

// WithBadCredentialsBackoff sets how long the client refuses to call gettoken
// again after it answered 40001, 40013 or 40091 (default one minute): WeCom
// bans an IP that repeats bad secrets.
func WithBadCredentialsBackoff(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return invalid("bad credentials backoff", "%s is not positive", d)
		}
		c.tokens.badFor = d
		return nil
	}
}

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

const (
	// tokenSkew is how long before its expiry a token stops being used.
	tokenSkew = 10 * time.Second
	// tokenRefreshRetry is how long a failed refresh ahead waits to retry,
	// the old token being still good.
	tokenRefreshRetry = 30 * time.Second
)

// tokenManager hands out the client's access token: from its local copy, else
// from the store, else from one fetch shared by every caller that needs it.
type tokenManager struct {
	c            *Client
	store        TokenStore
	source       TokenSource
	refreshAhead time.Duration
	badFor       time.Duration
	key          string // store key
	app          string // app id for limiter keys: a hash of the secret

	mu       sync.Mutex
	cur      cachedToken
	flight   *tokenFlight
	bad      error
	badUntil time.Time
	// held: the last maxHeldTokens distinct tokens this client accepted or saw
	// (from the store, the source or gettoken), oldest first, for redaction:
	// a token dropped or replaced may still be echoed in outside text.
	held []string
	red  *redactor // of held and the secret; nil when held changed
}

// maxHeldTokens bounds tokenManager.held.
const maxHeldTokens = 8

type cachedToken struct {
	tok Token
	// usable: before this the token is handed out; refresh: from this on one
	// caller fetches a new one while the others keep using this one.
	usable, refresh time.Time
}

type tokenFlight struct {
	done     chan struct{}
	tok      Token
	err      error
	panicked any // re-panicked in every waiting caller
}

func (m *tokenManager) init() {
	if m.c.secret != "" {
		sum := sha256.Sum256([]byte(m.c.corpID + "\x00" + m.c.secret))
		m.app = hex.EncodeToString(sum[:8])
	} else {
		m.app = "source-" + strconv.Itoa(m.c.agentID)
	}
	m.key = "wecom:token:{" + m.c.corpID + "}:" + m.app
}

// token returns a usable access token. A caller waits only when there is no
// usable token; a refresh ahead of expiry runs in the background.
func (m *tokenManager) token(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("wecom: waiting for an access token: %w", err)
	}
	now := time.Now()
	m.mu.Lock()
	if m.cur.tok.Value != "" && now.Before(m.cur.usable) {
		v := m.cur.tok.Value
		if !now.Before(m.cur.refresh) && m.flight == nil && !now.Before(m.badUntil) {
			m.start(ctx)
		}
		m.mu.Unlock()
		return v, nil
	}
	if now.Before(m.badUntil) {
		err := m.bad
		m.mu.Unlock()
		return "", fmt.Errorf("wecom: not calling gettoken again before %s: %w", m.badUntil.Format(time.RFC3339), err)
	}
	f := m.flight
	if f == nil {
		f = m.start(ctx)
	}
	m.mu.Unlock()
	select {
	case <-f.done:
		if f.panicked != nil {
			panic(f.panicked)
		}
		if f.err != nil {
			return "", f.err
		}
		return f.tok.Value, nil
	case <-ctx.Done():
		return "", fmt.Errorf("wecom: waiting for an access token: %w", ctx.Err())
	}
}

// start launches the fetch every caller that needs a token shares. It runs
// detached from the caller's cancellation and ends by itself within
// fetchTimeout. Called with m.mu held.
func (m *tokenManager) start(ctx context.Context) *tokenFlight {
	f := &tokenFlight{done: make(chan struct{})}
	m.flight = f
	go m.fetch(context.WithoutCancel(ctx), f, m.cur)
	return f
}

// invalidate drops tok, WeCom having refused it, unless a newer token already
// replaced it.
func (m *tokenManager) invalidate(ctx context.Context, tok string) {
	m.mu.Lock()
	if m.cur.tok.Value == tok {
		m.cur = cachedToken{}
	}
	m.mu.Unlock()
	if err := m.store.Delete(context.WithoutCancel(ctx), m.key, tok); err != nil {
		m.c.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: token store delete failed", slog.String("error", m.c.redactText(err.Error())))
	}
}

// fetch gets a token for flight f, replacing prev (empty, expiring, or
// refused), and publishes it.
func (m *tokenManager) fetch(ctx context.Context, f *tokenFlight, prev cachedToken) {
	ctx, cancel := context.WithTimeout(ctx, m.c.fetchTimeout())
	defer cancel()
	tok, panicked, err := m.safeObtain(ctx, prev)
	// Before taking m.mu: redaction reads the tokens held under it. The
	// callers and the log get the same clean error.
	err = m.c.redactErr(err)
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.flight = nil
	f.panicked = panicked
	if err != nil {
		if errors.Is(err, ErrBadCredentials) {
			m.bad, m.badUntil = err, now.Add(m.badFor)
		}
		if m.cur.tok.Value != "" && m.cur.tok.Value == prev.tok.Value {
			// A refresh ahead failed: keep the token, try again later.
			m.cur.refresh = now.Add(tokenRefreshRetry)
		}
		m.c.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: access token fetch failed", slog.String("corp", m.c.corpID), slog.String("error", err.Error()))
		f.err = err
	} else {
		m.remember(tok.Value)
		m.cur = m.accept(prev, tok, now)
		f.tok = tok
	}
	close(f.done)
}

// safeObtain is obtain with a panic (in an observer or a log handler, say)
// caught, so that it reaches the waiting callers instead of killing the
// process from the detached fetch goroutine.
func (m *tokenManager) safeObtain(ctx context.Context, prev cachedToken) (t Token, panicked any, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked, err = p, fmt.Errorf("wecom: access token fetch panicked: %v", p)
		}
	}()
	t, err = m.obtain(ctx, prev)
	return t, nil, err
}

// remember records v among the tokens held. Called with m.mu held.
func (m *tokenManager) remember(v string) {
	if v == "" {
		return
	}
	for i, h := range m.held {
		if h == v {
			// Most recent last, so that the token in use is dropped last.
			m.held = append(append(m.held[:i:i], m.held[i+1:]...), v)
			return
		}
	}
	m.red = nil
	if len(m.held) == maxHeldTokens {
		m.held = append(m.held[:0:0], m.held[1:]...)
	}
	m.held = append(m.held, v)
}

// redactor returns the redactor of the client's secret and the tokens held,
// built again only when they change.
func (m *tokenManager) redactor() *redactor {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.red == nil {
		m.red = newRedactor(append(append([]string(nil), m.held...), m.c.secret)...)
	}
	return m.red
}

// better reports whether a stored token t can replace prev: it must be valid
// for a while and, when prev is being refreshed, newer than prev.
func better(prev cachedToken, t Token, now time.Time) bool {
	if !now.Add(tokenSkew).Before(t.ExpiresAt) {
		return false
	}
	return prev.tok.Value == "" || (t.Value != prev.tok.Value && t.ExpiresAt.After(prev.tok.ExpiresAt))
}

func (m *tokenManager) obtain(ctx context.Context, prev cachedToken) (Token, error) {
	if t, ok := m.stored(ctx, prev); ok {
		return t, nil
	}
	// One fetch at a time per app, across everything that shares the limiter.
	if r, ok := m.c.limitsFor(string(catalog.GetToken)).rule(catalog.RuleFetch); ok {
		fetch := &call{id: catalog.GetToken, path: string(catalog.GetToken)}
		keys := m.c.ruleKeys(fetch, r, m.c.now())
		if len(keys) != 1 || r.InFlight == 0 {
			return Token{}, invalid("limits "+fetch.path, "rule %q must cap the fetches in flight per app", r.Name)
		}
		l, err := m.c.limiter.Acquire(ctx, throttle.Request{Key: keys[0], Concurrency: r.InFlight, TTL: m.c.leaseTTL()})
		if err != nil {
			return Token{}, m.c.limitError(fetch.path, false, err)
		}
		leases := []throttle.Lease{l}
		defer m.c.release(ctx, leases)
		defer m.c.keepAlive(ctx, leases)() // the fetch may outlast the TTL
		// Whoever held the lease before us may have stored a fresh token.
		if t, ok := m.stored(ctx, prev); ok {
			return t, nil
		}
	}
	t, err := m.get(ctx)
	if err != nil {
		return Token{}, err
	}
	if err := m.store.Set(ctx, m.key, t); err != nil {
		m.c.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: token store set failed", slog.String("error", m.c.redactText(err.Error())))
	}
	m.c.logger.LogAttrs(ctx, slog.LevelInfo, "wecom: access token fetched", slog.String("corp", m.c.corpID), slog.Time("expires", t.ExpiresAt))
	return t, nil
}

// stored returns a token from the store that can replace prev.
func (m *tokenManager) stored(ctx context.Context, prev cachedToken) (Token, bool) {
	t, err := m.store.Get(ctx, m.key)
	if err != nil {
		if !errors.Is(err, ErrNoToken) {
			m.c.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: token store get failed", slog.String("error", m.c.redactText(err.Error())))
		}
		return Token{}, false
	}
	m.mu.Lock()
	m.remember(t.Value)
	m.mu.Unlock()
	return t, better(prev, t, time.Now())
}

// get asks the token source, or gettoken.
func (m *tokenManager) get(ctx context.Context) (Token, error) {
	if m.source != nil {
		t, err := m.source.Token(ctx)
		m.mu.Lock()
		m.remember(t.Value)
		m.mu.Unlock()
		if err != nil {
			return Token{}, fmt.Errorf("wecom: token source: %w", m.c.redactErr(err))
		}
		if t.Value == "" || !time.Now().Before(t.ExpiresAt) {
			return Token{}, fmt.Errorf("wecom: token source returned an empty or expired token")
		}
		return t, nil
	}
	var out tokenAnswer
	q := url.Values{"corpid": {m.c.corpID}, "corpsecret": {m.c.secret}}
	start := time.Now()
	if err := m.c.do(ctx, &call{id: catalog.GetToken, query: q, out: &out}); err != nil {
		return Token{}, err
	}
	return Token{Value: out.AccessToken, ExpiresAt: start.Add(time.Duration(out.ExpiresIn) * time.Second)}, nil
}

// tokenAnswer is gettoken's answer.
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
}

// validate: a token answer carries a token and its lifetime.
func (a *tokenAnswer) validate() error {
	if a.AccessToken == "" || a.ExpiresIn <= 0 {
		return errors.New("gettoken answered no access_token or no positive expires_in")
	}
	return nil
}

// accept turns a fetched token into the local copy, with its refresh time.
func (m *tokenManager) accept(prev cachedToken, t Token, now time.Time) cachedToken {
	if t.Value == prev.tok.Value {
		// WeCom hands out the same token until it expires, so refreshing it
		// early again gains nothing: use it to its end (the earlier of the
		// two expiries seen), then fetch.
		if prev.tok.ExpiresAt.Before(t.ExpiresAt) {
			t.ExpiresAt = prev.tok.ExpiresAt
		}
		return cachedToken{tok: t, usable: t.ExpiresAt, refresh: t.ExpiresAt}
	}
	skew := min(tokenSkew, t.ExpiresAt.Sub(now)/2)
	ahead := m.refreshAhead - time.Duration(rand.Int64N(int64(m.refreshAhead)/5+1))
	return cachedToken{tok: t, usable: t.ExpiresAt.Add(-skew), refresh: t.ExpiresAt.Add(-ahead)}
}
