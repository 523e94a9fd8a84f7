// Many corps in one process: a Registry builds the client of each (corp,
// app) on first use from a CredentialSource (corp_source.go), every client
// sharing the registry's limiter, token store, transport and resolved
// limits, and forgets the clients left idle.

package wecom

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultIdleTimeout is how long a Registry keeps a client nobody asked
// for.
const DefaultIdleTimeout = 30 * time.Minute

// Registry hands out the Client of each app of many corps: a service
// provider's authorizing corps, or a company's several corps. It builds a
// client the first time its app is asked for, from the credentials its
// CredentialSource finds (concurrent first asks build one), and drops it
// once nobody asked for it for the idle timeout; the next ask builds it
// again, at the cost of a lookup in the source (its tokens stay in the
// token store).
//
// Every client of a registry shares one limiter backend, one token store,
// one HTTP transport and the options of WithClientOptions; WithCorpOptions
// adds a corp's own (its limits, say). A client costs a few kilobytes and
// no goroutine: the registry runs none, and its one timer, armed while it
// holds a client, runs only to drop the idle ones. With WithEgress among
// the client options, WeCom's per-IP limits hold across every corp the
// registry serves, and across the processes sharing a Redis limiter.
//
// Take the client from the registry for each piece of work rather than
// keeping it: a client kept past the idle timeout still works, but the
// registry no longer knows it. A Registry is safe for concurrent use.
type Registry struct {
	src  CredentialSource
	tmpl *config // the shared options applied, its limits resolved
	// corps are WithCorpOptions's options, by corp id.
	corps map[string][]Option
	// tables are the limits of the corps whose options change them.
	tables map[string]*limitTable
	idle   time.Duration

	mu      sync.Mutex
	clients map[App]*registered
	timer   *time.Timer // armed while clients holds one; nil until the first
}

// registered is a client of the registry, or the build of one under way.
type registered struct {
	ready chan struct{} // closed when c or err is set
	c     *Client
	err   error
	used  time.Time // when it was last asked for; guarded by Registry.mu
}

// RegistryOption configures a Registry. NewRegistry fails on a bad one.
type RegistryOption func(*Registry) error

// WithClientOptions sets the options of every client of the registry
// (WithBaseURL, WithLimiter, WithTokenStore, WithTransport, WithEgress,
// WithIPLimits, ...), applied once by NewRegistry: what they make is made
// once and shared (a limiter, a token store, a transport given or made by
// default), as are the limits they resolve.
func WithClientOptions(opts ...Option) RegistryOption {
	return func(r *Registry) error {
		for _, opt := range opts {
			if opt == nil {
				return invalid("client option", "nil")
			}
			if err := opt(r.tmpl); err != nil {
				return err
			}
		}
		return nil
	}
}

// WithCorpOptions adds options to the clients of one corp, after those of
// WithClientOptions: its own limits (WithLimits, WithRule), say. A corp
// whose options change its limits resolves its own; the others share the
// registry's.
func WithCorpOptions(corpID string, opts ...Option) RegistryOption {
	return func(r *Registry) error {
		if err := validID("corp id", corpID); err != nil {
			return err
		}
		for _, opt := range opts {
			if opt == nil {
				return invalid("corp option", "nil")
			}
		}
		r.corps[corpID] = append(r.corps[corpID], opts...)
		return nil
	}
}

// WithIdleTimeout sets how long the registry keeps a client nobody asked
// for (default DefaultIdleTimeout).
func WithIdleTimeout(d time.Duration) RegistryOption {
	return func(r *Registry) error {
		if d <= 0 {
			return invalid("idle timeout", "%s is not positive", d)
		}
		r.idle = d
		return nil
	}
}

// NewRegistry returns a registry of the apps src has credentials for. It
// starts no goroutine and builds no client.
func NewRegistry(src CredentialSource, opts ...RegistryOption) (*Registry, error) {
	if src == nil {
		return nil, invalid("credential source", "nil")
	}
	tmpl, err := newConfig("", "", nil)
	if err != nil {
		return nil, err
	}
	r := &Registry{src: src, tmpl: tmpl, corps: make(map[string][]Option), idle: DefaultIdleTimeout, clients: make(map[App]*registered)}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("registry option", "nil")
		}
		if err := opt(r); err != nil {
			return nil, err
		}
	}
	if r.tmpl.table, err = newLimitTable(r.tmpl); err != nil {
		return nil, err
	}
	// A corp's options fail now rather than on its first call, and the
	// limits of a corp that changes them are resolved once.
	r.tables = make(map[string]*limitTable)
	for corp, opts := range r.corps {
		cfg, err := r.config(App{CorpID: corp}, Credentials{Secret: "-"}, opts)
		if err == nil && cfg.table == nil {
			r.tables[corp], err = newLimitTable(cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("wecom: corp %s: %w", corp, err)
		}
	}
	return r, nil
}

// Client returns the client of app, built on first use from the
// credentials the source has for it. Callers asking for an app while its
// client is built wait for that one build (or for ctx). A failed build is
// not kept: the next ask tries again.
func (r *Registry) Client(ctx context.Context, app App) (*Client, error) {
	if err := validID("corp id", app.CorpID); err != nil {
		return nil, err
	}
	if app.AgentID < 0 {
		return nil, invalid("agent id", "%d is negative", app.AgentID)
	}
	for {
		r.mu.Lock()
		e := r.clients[app]
		if e == nil {
			e = &registered{ready: make(chan struct{}), used: time.Now()}
			r.clients[app] = e
			r.armLocked(r.idle)
			r.mu.Unlock()
			r.build(ctx, app, e)
			return e.c, e.err
		}
		e.used = time.Now()
		r.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("wecom: waiting for the client of %s: %w", app, ctx.Err())
		}
		if e.err == nil || ctx.Err() != nil || !isContextErr(e.err) {
			return e.c, e.err
		}
		// The build failed because its caller gave up: this caller builds.
	}
}

// build builds e, the client of app, and publishes it; a failed build,
// or one whose source or options panicked, is forgotten.
func (r *Registry) build(ctx context.Context, app App, e *registered) {
	defer func() {
		if e.c == nil {
			if e.err == nil {
				e.err = fmt.Errorf("wecom: the client of %s: its build panicked", app)
			}
			r.mu.Lock()
			if r.clients[app] == e {
				delete(r.clients, app)
			}
			r.mu.Unlock()
		}
		close(e.ready)
	}()
	c, err := r.newClientOf(ctx, app)
	if err != nil {
		e.err = fmt.Errorf("wecom: the client of %s: %w", app, err)
		return
	}
	e.c = c
}

// newClientOf builds the client of app from the source's credentials.
func (r *Registry) newClientOf(ctx context.Context, app App) (*Client, error) {
	cr, err := r.src.Credentials(ctx, app)
	if err != nil {
		return nil, err
	}
	cfg, err := r.config(app, cr, r.corps[app.CorpID])
	if err != nil {
		return nil, err
	}
	return newClient(cfg)
}

// config returns the configuration of app's client: the registry's with
// cr and the corp's options applied, and the corp's limits (resolved by
// NewRegistry) or the registry's.
func (r *Registry) config(app App, cr Credentials, opts []Option) (*config, error) {
	if app.AgentID != 0 && cr.AgentID != 0 && app.AgentID != cr.AgentID {
		return nil, invalid("agent id", "the source gave %d for %s", cr.AgentID, app)
	}
	var cfg *config
	if len(opts) > 0 {
		cfg = r.tmpl.clone()
	} else {
		cp := *r.tmpl // its overrides stay shared: no option changes them
		cfg = &cp
	}
	cfg.corpID, cfg.secret, cfg.tokenSource = app.CorpID, cr.Secret, cr.Source
	if agent := max(app.AgentID, cr.AgentID); agent > 0 {
		cfg.agentID = agent
	}
	for _, opt := range opts {
		if err := opt(cfg); err != nil {
			return nil, err
		}
	}
	if cfg.table == nil {
		cfg.table = r.tables[app.CorpID] // nil before NewRegistry resolves it
	}
	return cfg, nil
}

// Drop forgets the client of app and deletes the tokens it keeps in the
// token store (its access token, its JS-SDK tickets), as when the corp
// cancels its authorization (cancel_auth). A client not in memory is
// built to name them, so call Drop before the source forgets the app; an
// app the source does not know has nothing to drop. A caller still
// holding the client may go on with it: it fetches a new token.
func (r *Registry) Drop(ctx context.Context, app App) error {
	r.mu.Lock()
	e := r.clients[app]
	delete(r.clients, app)
	r.mu.Unlock()
	var c *Client
	if e != nil {
		select {
		case <-e.ready:
			c = e.c
		case <-ctx.Done():
			return fmt.Errorf("wecom: dropping %s: %w", app, ctx.Err())
		}
	}
	if c == nil {
		var err error
		c, err = r.newClientOf(ctx, app)
		if errors.Is(err, ErrUnknownApp) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("wecom: dropping %s: %w", app, err)
		}
	}
	return c.p.forgetCorp(ctx)
}

// Len returns how many clients the registry holds now, builds under way
// included.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.clients)
}

// armLocked arms the timer that drops idle clients to fire in d, unless
// it is armed already. r.mu is held.
func (r *Registry) armLocked(d time.Duration) {
	if r.timer == nil {
		r.timer = time.AfterFunc(d, r.sweep)
		return
	}
	if len(r.clients) == 1 { // the first since the timer last found none
		r.timer.Reset(d)
	}
}

// sweep drops the clients nobody asked for in the idle timeout, and arms
// the timer for the next one to go idle.
func (r *Registry) sweep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	next := time.Duration(-1)
	for app, e := range r.clients {
		left := r.idle - now.Sub(e.used)
		if left <= 0 {
			delete(r.clients, app)
			continue
		}
		if next < 0 || left < next {
			next = left
		}
	}
	if next >= 0 {
		r.timer.Reset(next)
	}
}

// isContextErr reports whether err says a context ended.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
