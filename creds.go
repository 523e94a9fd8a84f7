// The credentials of a pipeline: how each is built from the configuration
// (the corp's access token, a robot's key) and fetched through the
// pipeline's lower steps, under a fleet-wide lock.

package wecom

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// credentialEnv returns the environment of the pipeline's credentials.
func (p *pipeline) credentialEnv() credentialEnv {
	return credentialEnv{logger: p.cfg.logger, corp: p.cfg.corpID, fetchTimeout: p.cfg.fetchTimeout(), redactErr: p.redactErr, redactText: p.redactText}
}

// kept returns a credential kept as the access token is (its store,
// refresh ahead and backoff), fetched under a fleet-wide lock of lockKey
// held by calls of path. The caller sets its ask.
func (p *pipeline) kept(name, key, app, lockKey string, path catalog.ID, secrets ...string) *credential {
	return &credential{env: p.credentialEnv(), name: name, store: p.cfg.tokenStore, refreshAhead: p.cfg.refreshAhead, badFor: p.cfg.badFor,
		key: key, app: app, secrets: secrets, refused: func(int) bool { return false },
		lock: func(ctx context.Context) (func(), error) {
			return p.lockKey(ctx, path.Path(), throttle.Request{Key: lockKey, Concurrency: 1, TTL: p.cfg.leaseTTL})
		}}
}

// askToken makes cl, whose answer says a value and its lifetime in seconds
// (read by value once it is in), and returns them as a Token expiring that
// long after the call began.
func (p *pipeline) askToken(ctx context.Context, cl *call, value func() (string, int64)) (Token, error) {
	start := time.Now()
	if err := p.perform(ctx, cl); err != nil {
		return Token{}, err
	}
	v, in := value()
	return Token{Value: v, ExpiresAt: start.Add(time.Duration(in) * time.Second)}, nil
}

// corpCredential returns the corp's access token: from the token source
// when there is one, else fetched with gettoken.
func (p *pipeline) corpCredential() *credential {
	cfg := p.cfg
	m := &credential{env: p.credentialEnv(), name: "access token", store: cfg.tokenStore, source: cfg.tokenSource,
		refreshAhead: cfg.refreshAhead, badFor: cfg.badFor, secrets: []string{cfg.secret}}
	if cfg.secret != "" {
		sum := sha256.Sum256([]byte(cfg.corpID + "\x00" + cfg.secret))
		m.app = hex.EncodeToString(sum[:8])
	} else {
		m.app = "source-" + strconv.Itoa(cfg.agentID)
	}
	m.key = "wecom:token:{" + cfg.corpID + "}:" + m.app
	m.lock = p.fetchLock
	m.ask = func(ctx context.Context) (Token, error) {
		if m.source != nil {
			return m.fromSource(ctx)
		}
		var out tokenAnswer
		q := url.Values{"corpid": {cfg.corpID}, "corpsecret": {cfg.secret}}
		return p.askToken(ctx, &call{id: catalog.GetToken, query: q, out: &out}, func() (string, int64) { return out.AccessToken, out.ExpiresIn })
	}
	m.param, m.refused = catalog.CorpToken.String(), func(code int) bool {
		return code == CodeInvalidAccessToken || code == CodeAccessTokenExpired
	}
	return m
}

// fetchLock holds the lock of the corp token's fetch: the RuleFetch rule of
// gettoken, one fetch at a time per app, renewed while the fetch runs.
func (p *pipeline) fetchLock(ctx context.Context) (func(), error) {
	r, ok := p.limitsFor(string(catalog.GetToken)).rule(catalog.RuleFetch)
	if !ok {
		return func() {}, nil
	}
	fetch := &call{id: catalog.GetToken, path: string(catalog.GetToken)}
	key := p.ruleKey(fetch, r, p.cfg.now())
	if key == "" || r.InFlight == 0 {
		return nil, invalid("limits "+fetch.path, "rule %q must cap the fetches in flight per app", r.Name)
	}
	return p.lockKey(ctx, fetch.path, throttle.Request{Key: key, Concurrency: r.InFlight, TTL: p.cfg.leaseTTL})
}

// lockKey takes the lease r, renewed until the returned release gives it
// back.
func (p *pipeline) lockKey(ctx context.Context, path string, r throttle.Request) (func(), error) {
	r.OnStall = func(s throttle.Stall) { p.stalls.tell(ctx, path, s) }
	l, err := p.cfg.limiter.Acquire(ctx, r)
	if err != nil {
		return nil, p.limitError(path, 0, err)
	}
	leases := []throttle.Lease{l}
	stop := p.keepAlive(ctx, leases) // the fetch may outlast the TTL
	return func() {
		stop()
		p.release(ctx, leases)
	}, nil
}

// corp returns the corp's access token, or nil (a robot's pipeline).
func (p *pipeline) corp() *credential {
	m, _ := p.creds[catalog.CorpToken].(*credential)
	return m
}

// forgetCorp drops the corp's credentials: the access token and the
// JS-SDK tickets, here and in the token store (Registry.Drop).
func (p *pipeline) forgetCorp(ctx context.Context) error {
	var errs []error
	for _, m := range []*credential{p.corp(), p.tickets.jsapi, p.tickets.agent} {
		if m != nil {
			errs = append(errs, m.forget(ctx))
		}
	}
	return errors.Join(errs...)
}

// redactor returns the pipeline's redactor: its secret and every value its
// credentials have held.
func (p *pipeline) redactor() *redactor {
	corp := p.corp()
	var more []string
	for kind, m := range p.creds {
		if kind != catalog.CorpToken {
			more = append(more, m.values()...)
		}
	}
	for _, m := range []*credential{p.tickets.jsapi, p.tickets.agent} {
		if m != nil {
			more = append(more, m.values()...)
		}
	}
	switch {
	case corp == nil && len(more) == 0:
		return newRedactor(p.cfg.secret)
	case corp == nil:
		return newRedactor(more...)
	case len(more) == 0:
		return corp.redactor()
	}
	return newRedactor(append(corp.values(), more...)...)
}

// redactErr returns err with its text, and any URL in it, free of the client's
// secret and of every token it has held, by value and by structure (see
// redactor). errors.Is and errors.As work on the result as on err for the
// classes callers branch on; the original text stays out of reach.
func (p *pipeline) redactErr(err error) error {
	if err == nil {
		return nil
	}
	return p.redactor().err(err)
}

// redactText returns s free of the client's secret, of every token it has
// held and of any credential key's value: for outside text (WeCom's or a
// proxy's errmsg, bodies) placed in an error or a log line.
func (p *pipeline) redactText(s string) string {
	return p.redactor().text(s)
}
