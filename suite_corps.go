// A suite's authorizing corps: their installations kept in a store the
// user provides, the authorization callbacks applied to it, and a Registry
// of their clients running on corp tokens from get_corp_token.

package wecom

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wecomkit/wecom/callback"
	"github.com/wecomkit/wecom/catalog"
)

// The InfoTypes of a suite's authorization callbacks (callback.AuthEvent).
const (
	InfoCreateAuth = "create_auth"
	InfoChangeAuth = "change_auth"
	InfoCancelAuth = "cancel_auth"
)

// Installation is what a suite keeps of a corp that installed it: the
// permanent code, its credential for the suite for as long as the
// installation lasts, and the agent id of the suite's app in the corp.
type Installation struct {
	PermanentCode string
	AgentID       int
}

// PermanentCodeStore keeps a suite's installations by corp id. Get
// returns an error matching ErrUnknownApp for a corp it holds none of;
// Delete of such a corp is no error. Implementations are safe for
// concurrent use; one shared by the fleet (redisstore.PermanentCodes)
// lets every process serve every corp.
type PermanentCodeStore interface {
	Get(ctx context.Context, corpID string) (Installation, error)
	Set(ctx context.Context, corpID string, in Installation) error
	Delete(ctx context.Context, corpID string) error
}

// MemoryPermanentCodes is a PermanentCodeStore in memory, for one process
// (and for tests). The zero value is ready; it is safe for concurrent use.
type MemoryPermanentCodes struct {
	mu sync.RWMutex
	m  map[string]Installation
}

// Get implements PermanentCodeStore.
func (s *MemoryPermanentCodes) Get(_ context.Context, corpID string) (Installation, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	in, ok := s.m[corpID]
	if !ok {
		return Installation{}, fmt.Errorf("%w %s: no permanent code", ErrUnknownApp, corpID)
	}
	return in, nil
}

// Set implements PermanentCodeStore.
func (s *MemoryPermanentCodes) Set(_ context.Context, corpID string, in Installation) error {
	if err := in.Validate(corpID); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]Installation)
	}
	s.m[corpID] = in
	return nil
}

// Delete implements PermanentCodeStore.
func (s *MemoryPermanentCodes) Delete(_ context.Context, corpID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, corpID)
	return nil
}

// Len returns how many installations the store holds.
func (s *MemoryPermanentCodes) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}

// Validate checks an installation of corpID before a PermanentCodeStore
// keeps it: a corp id fit for keys, a permanent code, an agent id. Its
// error (a *ValidationError) never holds the code.
func (in Installation) Validate(corpID string) error {
	if err := validID("corp id", corpID); err != nil {
		return err
	}
	switch {
	case in.PermanentCode == "":
		return invalid("permanent code", "empty")
	case in.AgentID <= 0:
		return invalid("agent id", "%d is not positive", in.AgentID)
	}
	return nil
}

// Installations are a suite's authorizing corps, as a service provider
// serves them: the authorization callbacks (Handle) keep each corp's
// permanent code in a PermanentCodeStore, and a Registry builds the client
// of each corp on first use from it, running on the corp's token from
// service/get_corp_token — fetched lazily, once per corp for the whole
// fleet, kept in the registry's token store as access tokens are.
//
// Give the registry (opts) the suite's token store, limiter and transport
// (WithClientOptions), so that the corp tokens and the limits are shared
// as the suite's are. The clients are a third-party app's: with the
// fleet's egress declared (WithEgress), their per-IP windows hold WeCom's
// third-party limits, catalog.ThirdPartyIPPerMinute and
// catalog.ThirdPartyIPPerHour, unless WithIPLimits among opts says
// otherwise. Installations are safe for concurrent use.
type Installations struct {
	suite *Suite
	codes PermanentCodeStore
	reg   *Registry
}

// NewInstallations returns the installations of suite kept in codes, and
// their Registry made with opts.
func NewInstallations(suite *Suite, codes PermanentCodeStore, opts ...RegistryOption) (*Installations, error) {
	switch {
	case suite == nil:
		return nil, invalid("suite", "nil")
	case codes == nil:
		return nil, invalid("permanent code store", "nil")
	}
	in := &Installations{suite: suite, codes: codes}
	thirdParty := WithClientOptions(WithIPLimits(catalog.ThirdPartyIPPerMinute, catalog.ThirdPartyIPPerHour))
	reg, err := NewRegistry(in, append([]RegistryOption{thirdParty}, opts...)...)
	if err != nil {
		return nil, err
	}
	in.reg = reg
	return in, nil
}

// Suite returns the suite.
func (in *Installations) Suite() *Suite { return in.suite }

// Registry returns the registry of the corps' clients.
func (in *Installations) Registry() *Registry { return in.reg }

// Client returns the client of corp corpID (its suite app), built on first
// use; an error matching ErrUnknownApp says the corp has not installed the
// suite, or cancelled.
func (in *Installations) Client(ctx context.Context, corpID string) (*Client, error) {
	return in.reg.Client(ctx, App{CorpID: corpID})
}

// Credentials implements CredentialSource: the corp's token from
// get_corp_token with its permanent code, for its suite app.
func (in *Installations) Credentials(ctx context.Context, app App) (Credentials, error) {
	inst, err := in.codes.Get(ctx, app.CorpID)
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{Source: in.suite.CorpTokenSource(app.CorpID, inst.PermanentCode), AgentID: inst.AgentID}, nil
}

// Receive applies an authorization callback of the suite: create_auth
// spends its auth code for the corp's permanent code (PermanentCode), reads
// the agent id of the suite's app (AuthInfo), keeps both in the store and
// returns the Authorization, to the end even if ctx ends meanwhile (within
// a minute): the code is spent once, and WeCom hangs up after 1 s.
// cancel_auth drops the corp from the registry, its tokens from the token
// store (Registry.Drop), then its permanent code from the store;
// change_auth changes nothing kept. Another process's registry forgets a
// cancelled corp once idle; its calls meanwhile fail with
// ErrBadCredentials, as WeCom refuses the corp's token and then its
// permanent code (get_corp_token is asked once a
// WithBadCredentialsBackoff). A callback of another suite or InfoType is a
// *ValidationError.
func (in *Installations) Receive(ctx context.Context, ev *callback.AuthEvent) (*Authorization, error) {
	switch {
	case ev == nil:
		return nil, invalid("auth event", "nil")
	case ev.SuiteID != in.suite.id:
		return nil, invalid("auth event", "for suite %q, not %q", ev.SuiteID, in.suite.id)
	}
	switch ev.InfoType {
	case InfoCreateAuth:
		return in.install(ctx, ev.AuthCode)
	case InfoCancelAuth:
		if err := validID("corp id", ev.AuthCorpID); err != nil {
			return nil, err
		}
		if err := in.reg.Drop(ctx, App{CorpID: ev.AuthCorpID}); err != nil {
			return nil, err
		}
		return nil, in.codes.Delete(ctx, ev.AuthCorpID)
	case InfoChangeAuth:
		return nil, nil
	}
	return nil, invalid("auth event", "InfoType %q is none of create_auth, change_auth, cancel_auth", ev.InfoType)
}

// installBound bounds a create_auth's exchange (installing), which its
// caller's context does not end.
const installBound = time.Minute

// installing returns the context a create_auth's exchange runs in: ctx's
// values, not its end, within installBound. WeCom hangs up on a command
// callback after 1 s and pushes it again, but the auth code is spent at
// the first get_permanent_code: an exchange cut short after it would
// lose the corp's permanent code for good, and every push after it would
// be refused.
func installing(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), installBound)
}

// install spends authCode and keeps the installation it gives, to the end
// whatever ctx does (installing).
func (in *Installations) install(ctx context.Context, authCode string) (*Authorization, error) {
	ctx, cancel := installing(ctx)
	defer cancel()
	a, err := in.suite.PermanentCode(ctx, authCode)
	if err != nil {
		return nil, err
	}
	info, err := in.suite.AuthInfo(ctx, a.Corp.CorpID, a.PermanentCode)
	if err != nil {
		return nil, err
	}
	if len(info.Agents) == 0 {
		return nil, fmt.Errorf("wecom: corp %s installed no app of suite %s", a.Corp.CorpID, in.suite.id)
	}
	a.Agents = info.Agents
	if err := in.codes.Set(ctx, a.Corp.CorpID, Installation{PermanentCode: a.PermanentCode, AgentID: info.Agents[0].AgentID}); err != nil {
		return nil, newRedactor(a.PermanentCode).err(err) // a store of the user's: its error may quote the code
	}
	return a, nil
}

// Handle registers on h, a handler of the suite's command URL, the
// suite's tickets (Suite.ReceiveTicket) and its authorization callbacks
// (Receive); then, if not nil, is called after Receive succeeded with the
// callback and, for create_auth, the Authorization, in a context WeCom's
// hanging up does not end (as Receive's exchange). A failure answers
// WeCom 500, which makes it push the callback again.
func (in *Installations) Handle(h *callback.Handler, then func(ctx context.Context, ev *callback.AuthEvent, a *Authorization) error) {
	callback.Handle(h, in.suite.ReceiveTicket)
	callback.Handle(h, func(ctx context.Context, ev *callback.AuthEvent) error {
		if ev != nil && ev.InfoType == InfoCreateAuth { // its code spent, what follows runs to its end
			var cancel context.CancelFunc
			ctx, cancel = installing(ctx)
			defer cancel()
		}
		a, err := in.Receive(ctx, ev)
		if err != nil || then == nil {
			return err
		}
		return then(ctx, ev, a)
	})
}
