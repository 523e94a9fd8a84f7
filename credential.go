// Credentials: the values a call carries or a caller signs with (the
// corp's access_token, a suite's or a provider's token, the JS-SDK
// tickets), each kept locally and in a store shared by the fleet, fetched
// once at a time fleet-wide, refreshed ahead of expiry, dropped exactly
// when WeCom refuses it, and redacted from every error and log.

package wecom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

const (
	// tokenSkew is how long before its expiry a token stops being used.
	tokenSkew = 10 * time.Second
	// tokenRefreshRetry is how long a failed refresh ahead waits to retry,
	// the old token being still good.
	tokenRefreshRetry = 30 * time.Second
)

// credential hands out one credential of the client: from its local copy,
// else from the store, else from one fetch shared by every caller that
// needs it.
type credential struct {
	env          credentialEnv
	name         string // for logs and errors: "access token", "jsapi ticket"
	store        TokenStore
	source       TokenSource // the corp's access token only
	refreshAhead time.Duration
	badFor       time.Duration
	key          string // store key
	app          string // app id for limiter keys: a hash of the secret
	// secrets are the values the fetch sends (a secret, a suite ticket):
	// redacted with the values held.
	secrets []string
	// ask asks WeCom (or the source) for a new value.
	ask func(ctx context.Context) (Token, error)
	// lock, when set, holds the fetch's fleet-wide lock; it returns its
	// release.
	lock func(ctx context.Context) (release func(), err error)
	// param is the query parameter a call carries it in ("access_token");
	// refused reports the errcodes that say WeCom refused it.
	param   string
	refused func(code int) bool

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
	// refusedVals: the last values WeCom refused (invalidate), never taken
	// back from the store.
	refusedVals []string
}

// credentialEnv is what a credential needs of its client: its log, the
// redaction of every secret and value the client holds, the corp to name
// in logs, and how long a fetch may take.
type credentialEnv struct {
	logger       *slog.Logger
	corp         string
	fetchTimeout time.Duration
	redactErr    func(error) error
	redactText   func(string) string
}

// carried is a credential as a call carries it: a value sent in a query
// parameter, kept and fetched (*credential) or given (givenKey).
type carried interface {
	// token returns the value to send.
	token(ctx context.Context) (string, error)
	// invalidate drops value, which WeCom refused.
	invalidate(ctx context.Context, value string)
	// refuses reports whether errcode code says WeCom refused the value.
	refuses(code int) bool
	// carriedIn is the query parameter the value goes in; label names the
	// credential in logs and errors.
	carriedIn() string
	label() string
	// values returns the secrets and values held, for redaction.
	values() []string
}

func (m *credential) refuses(code int) bool { return m.refused(code) }
func (m *credential) carriedIn() string     { return m.param }
func (m *credential) label() string         { return m.name }

// givenKey is a credential given, never fetched nor refreshed, which WeCom
// never refuses with a code of its own: a robot's webhook key, carried in
// the query as param and redacted as a secret.
type givenKey struct{ name, param, value string }

func (k givenKey) token(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("wecom: waiting for the %s: %w", k.name, err)
	}
	return k.value, nil
}

func (givenKey) invalidate(context.Context, string) {}
func (givenKey) refuses(int) bool                   { return false }
func (k givenKey) carriedIn() string                { return k.param }
func (k givenKey) label() string                    { return k.name }
func (k givenKey) values() []string                 { return []string{k.value} }

// maxRefused bounds credential.refusedVals.
const maxRefused = 4

// maxHeldTokens bounds credential.held.
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

// validExpiring checks a token answer: its value and a positive lifetime.
func validExpiring(what, value string, expiresIn int64) error {
	if value == "" || expiresIn <= 0 {
		return fmt.Errorf("no %s or no positive expires_in", what)
	}
	return nil
}

// token returns a usable value. A caller waits only when there is none; a
// refresh ahead of expiry runs in the background.
func (m *credential) token(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("wecom: waiting for the %s: %w", m.name, err)
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
		return "", fmt.Errorf("wecom: not fetching the %s again before %s: %w", m.name, m.badUntil.Format(time.RFC3339), err)
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
		return "", fmt.Errorf("wecom: waiting for the %s: %w", m.name, ctx.Err())
	}
}

// start launches the fetch every caller that needs a token shares. It runs
// detached from the caller's cancellation and ends by itself within
// fetchTimeout. Called with m.mu held.
func (m *credential) start(ctx context.Context) *tokenFlight {
	f := &tokenFlight{done: make(chan struct{})}
	m.flight = f
	go m.fetch(context.WithoutCancel(ctx), f, m.cur)
	return f
}

// invalidate drops tok, WeCom having refused it, unless a newer token already
// replaced it.
func (m *credential) invalidate(ctx context.Context, tok string) {
	m.mu.Lock()
	if m.cur.tok.Value == tok {
		m.cur = cachedToken{}
	}
	// Until the store forgets it (and if it cannot), a fetch must not take
	// it back from there.
	if !slices.Contains(m.refusedVals, tok) {
		m.refusedVals = append(m.refusedVals[max(0, len(m.refusedVals)-maxRefused+1):], tok)
	}
	m.mu.Unlock()
	if err := m.store.Delete(context.WithoutCancel(ctx), m.key, tok); err != nil {
		m.env.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: token store delete failed", slog.String("error", m.env.redactText(err.Error())))
	}
}

// forget drops the credential's copy, and the value its store keeps for
// the fleet if it is the one there now (Delete is conditional, so that a
// newer one another process stored meanwhile stays): the corp is gone.
func (m *credential) forget(ctx context.Context) error {
	m.mu.Lock()
	m.cur = cachedToken{}
	m.mu.Unlock()
	t, err := m.store.Get(ctx, m.key)
	if errors.Is(err, ErrNoToken) {
		return nil
	}
	if err == nil {
		err = m.store.Delete(ctx, m.key, t.Value)
	}
	if err != nil {
		return fmt.Errorf("wecom: dropping the %s of corp %s: %w", m.name, m.env.corp, m.env.redactErr(err))
	}
	return nil
}

// fetch gets a token for flight f, replacing prev (empty, expiring, or
// refused), and publishes it.
func (m *credential) fetch(ctx context.Context, f *tokenFlight, prev cachedToken) {
	ctx, cancel := context.WithTimeout(ctx, m.env.fetchTimeout)
	defer cancel()
	tok, panicked, err := m.safeObtain(ctx, prev)
	// Before taking m.mu: redaction reads the tokens held under it. The
	// callers and the log get the same clean error.
	err = m.env.redactErr(err)
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
		m.env.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: "+m.name+" fetch failed", slog.String("corp", m.env.corp), slog.String("error", err.Error()))
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
func (m *credential) safeObtain(ctx context.Context, prev cachedToken) (t Token, panicked any, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked, err = p, fmt.Errorf("wecom: %s fetch panicked: %v", m.name, p)
		}
	}()
	t, err = m.obtain(ctx, prev)
	return t, nil, err
}

// remember records v among the tokens held. Called with m.mu held.
func (m *credential) remember(v string) {
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

// values returns the secrets and the values held, for redaction.
func (m *credential) values() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append(append([]string(nil), m.held...), m.secrets...)
}

// redactor returns the redactor of the secrets and the values held, built
// again only when they change.
func (m *credential) redactor() *redactor {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.red == nil {
		m.red = newRedactor(append(append([]string(nil), m.held...), m.secrets...)...)
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

func (m *credential) obtain(ctx context.Context, prev cachedToken) (Token, error) {
	if t, ok := m.stored(ctx, prev); ok {
		return t, nil
	}
	// One fetch at a time, across everything that shares the limiter.
	if m.lock != nil {
		release, err := m.lock(ctx)
		if err != nil {
			return Token{}, err
		}
		defer release()
		// Whoever held the lock before us may have stored a fresh value.
		if t, ok := m.stored(ctx, prev); ok {
			return t, nil
		}
	}
	t, err := m.ask(ctx)
	if err != nil {
		return Token{}, err
	}
	stored, err := setNewer(ctx, m.store, m.key, t)
	if err != nil {
		m.env.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: token store set failed", slog.String("error", m.env.redactText(err.Error())))
	}
	if !stored && err == nil {
		// A newer one came in meanwhile (a slower fetch elsewhere ended
		// first): the fleet shares that one.
		if n, ok := m.stored(ctx, prev); ok {
			return n, nil
		}
	}
	m.env.logger.LogAttrs(ctx, slog.LevelInfo, "wecom: "+m.name+" fetched", slog.String("corp", m.env.corp), slog.Time("expires", t.ExpiresAt))
	return t, nil
}

// stored returns a token from the store that can replace prev.
func (m *credential) stored(ctx context.Context, prev cachedToken) (Token, bool) {
	t, err := m.store.Get(ctx, m.key)
	if err != nil {
		if !errors.Is(err, ErrNoToken) {
			m.env.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: token store get failed", slog.String("error", m.env.redactText(err.Error())))
		}
		return Token{}, false
	}
	m.mu.Lock()
	m.remember(t.Value)
	refused := slices.Contains(m.refusedVals, t.Value)
	m.mu.Unlock()
	return t, !refused && better(prev, t, time.Now())
}

// fromSource asks the token source.
func (m *credential) fromSource(ctx context.Context) (Token, error) {
	t, err := m.source.Token(ctx)
	m.mu.Lock()
	m.remember(t.Value)
	m.mu.Unlock()
	if err != nil {
		return Token{}, fmt.Errorf("wecom: token source: %w", m.env.redactErr(err))
	}
	if t.Value == "" || !time.Now().Before(t.ExpiresAt) {
		return Token{}, fmt.Errorf("wecom: token source returned an empty or expired token")
	}
	return t, nil
}

// tokenAnswer is gettoken's answer.
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
}

// validate: a token answer carries a token and its lifetime.
func (a *tokenAnswer) validate() error {
	return validExpiring("access_token", a.AccessToken, a.ExpiresIn)
}

// accept turns a fetched token into the local copy, with its refresh time.
func (m *credential) accept(prev cachedToken, t Token, now time.Time) cachedToken {
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

// tickets are the JS-SDK tickets a caller signs pages with: the corp's
// (wx.config) and the app's (wx.agentConfig).
type tickets struct{ jsapi, agent *credential }
