// The resolve step, before the loop: what a call's endpoint says of it
// (method, whether it is safe to repeat, the credential it carries) and
// what its limits count, read from its request.

package wecom

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/wecomkit/wecom/catalog"
)

// prepare completes a call from the client's table and returns its limits.
// A typed method naming an endpoint the catalog does not declare is a bug
// of the SDK; it fails here, and the shared endpoint tests catch it.
func (p *pipeline) prepare(cl *call) (*endpointLimits, error) {
	var el *endpointLimits
	if cl.id == "" {
		if err := p.checkDo(cl); err != nil {
			return nil, err
		}
		el = p.limitsFor(cl.path)
		cl.idempotent = cl.method == http.MethodGet
		if el.ep.Method != "" { // a wrapped endpoint: the catalog knows
			cl.idempotent = el.ep.Repeatable
		}
		cl.omitsErrcode = el.ep.OmitsErrcode
	} else {
		var ok bool
		if el, ok = p.endpoints[string(cl.id)]; !ok || el.ep.Method == "" {
			return nil, fmt.Errorf("wecom: %s is not in the catalog", cl.id)
		}
		cl.path, cl.method = string(cl.id), el.ep.Method
		cl.idempotent = el.ep.Repeatable
		cl.omitsErrcode = el.ep.OmitsErrcode
	}
	var err error
	if cl.cred, err = p.credentialOf(el.ep); err != nil {
		return nil, err
	}
	return el, p.readKeys(cl, el)
}

// credentialOf returns the credential calls of e carry, by the catalog's
// token kind (the corp's access token for a path the catalog does not
// declare), or nil for none. A kind the client does not hold fails with a
// *TokenKindError: never another token in its place.
func (p *pipeline) credentialOf(e catalog.Endpoint) (carried, error) {
	kind := e.Token
	if e.Method == "" {
		kind = catalog.CorpToken
	}
	if kind == catalog.NoToken {
		return nil, nil
	}
	if m := p.creds[kind]; m != nil {
		return m, nil
	}
	return nil, &TokenKindError{Path: e.ID.Path(), Needs: kind, Holds: p.holds()}
}

// holds is the kind of token the pipeline's calls carry.
func (p *pipeline) holds() catalog.Token {
	for kind := range p.creds {
		return kind // a pipeline holds one kind
	}
	return catalog.NoToken
}

// readKeys reads what cl's rules count per resource, per member or in
// units from its request, with its endpoint's Keys, the function the mock
// reads them with too. The body is encoded once, here, and sent as is. A
// call whose rules need what it does not say is refused: nothing is sent.
func (p *pipeline) readKeys(cl *call, el *endpointLimits) error {
	if !slices.ContainsFunc(el.rules, catalog.Rule.NeedsKeys) {
		return nil
	}
	if el.ep.Keys != nil {
		body, err := encoded(cl.body)
		if err != nil {
			return invalid("body", "%s: %v", cl.path, err)
		}
		if body != nil {
			cl.body = body
		}
		k, err := el.ep.Keys(keysQuery(cl, el.ep), body)
		if err != nil {
			return &ValidationError{Field: "request", Reason: fmt.Sprintf("%s: %v", cl.path, err), Err: err}
		}
		if k.Chat != "" {
			if cl.chatMembers == nil {
				return invalid("request", "%s names only its chat %q, and its limits count the chat's members, which only AppChats.Send knows (it reads them with appchat/get): send it with that", cl.path, k.Chat)
			}
			k.Members, k.Weight = cl.chatMembers, len(cl.chatMembers)
		}
		cl.resource, cl.members, cl.weight, cl.uncounted = k.Resource, k.Members, k.Weight, k.Uncounted
	}
	return counted(cl, el.rules)
}

// keysQuery is the query a call's Keys read: its own, with the robot's key
// for an endpoint whose limits count per robot (the key is what names the
// robot), as the server sees the query.
func keysQuery(cl *call, e catalog.Endpoint) url.Values {
	k, ok := cl.cred.(givenKey)
	if e.Token != catalog.RobotKey || !ok {
		return cl.query
	}
	q := maps.Clone(cl.query)
	if q == nil {
		q = url.Values{}
	}
	q.Set(k.param, k.value)
	return q
}

// checkDo checks a call Do makes: a wrapped path with its own method, no
// path a slip away from a wrapped one, GET or POST, an absolute path, no
// access_token of the caller's and no body for a GET.
func (p *pipeline) checkDo(cl *call) error {
	el, wrapped := p.endpoints[cl.path]
	wrapped = wrapped && el.ep.Method != ""
	if wrapped && el.ep.Method != cl.method {
		return invalid("method", "%s takes %s, not %s", cl.path, el.ep.Method, cl.method)
	}
	if !wrapped {
		if near := p.nearWrapped(cl.path); near != "" {
			return invalid("path", "%q is not an endpoint the SDK wraps, and would escape its limits: did you mean %q?", cl.path, near)
		}
	}
	switch {
	case cl.method != http.MethodGet && cl.method != http.MethodPost:
		return invalid("method", "%q is not GET or POST", cl.method)
	case !strings.HasPrefix(cl.path, "/") || strings.ContainsAny(cl.path, "?#"):
		return invalid("path", "%q is not an absolute path without query", cl.path)
	case cl.query.Has("access_token"):
		return invalid("query", "access_token is added by the client")
	case cl.method == http.MethodGet && cl.body != nil:
		return invalid("body", "a GET has no body")
	}
	return nil
}

// limitTable is how a client limits each path: every catalog endpoint and
// every overridden path, with their rules after the overrides, and the
// generic limits of any other path. It is never changed once built, so
// the clients of a Registry with the same overrides share one.
type limitTable struct {
	endpoints map[string]*endpointLimits
	generic   *endpointLimits
}

// newLimitTable builds the table of cfg: WeCom's per-IP limits as cfg
// sets them (WithIPLimits), then its overrides. An override of a path one
// typo away from a wrapped one is an error: it would silently change
// nothing.
func newLimitTable(cfg *config) (*limitTable, error) {
	t := &limitTable{endpoints: make(map[string]*endpointLimits)}
	for _, e := range catalog.Endpoints() {
		t.endpoints[string(e.ID)] = &endpointLimits{ep: e, rules: cfg.ipRules(e.Rules)}
	}
	t.generic = &endpointLimits{rules: cfg.ipRules(catalog.Generic())}
	for path, o := range cfg.overrides {
		el, ok := t.endpoints[path]
		if !ok {
			if near := nearEndpoint(path); near != "" {
				return nil, invalid("limits path", "%q is not an endpoint the SDK wraps: did you mean %q?", path, near)
			}
			el = &endpointLimits{ep: catalog.Endpoint{ID: catalog.ID(path)}, rules: cfg.ipRules(catalog.Generic())}
			t.endpoints[path] = el
		}
		if err := o.resolve(el); err != nil {
			return nil, err
		}
	}
	return t, t.checkShared()
}

// checkShared fails when the APIs that share a lock (a ScopeShared rule's
// group, such as mark_tag's and remark's per-customer lock) disagree on it
// after the overrides: they would count one key under different caps, or
// one would not take the lock the others wait for.
func (t *limitTable) checkShared() error {
	caps := make(map[string]map[string]int) // group -> path -> cap (0: none)
	note := func(path string, r catalog.Rule, n int) {
		if r.Scope != catalog.ScopeShared {
			return
		}
		if caps[r.Group] == nil {
			caps[r.Group] = make(map[string]int)
		}
		caps[r.Group][path] = n
	}
	for path, el := range t.endpoints {
		for _, r := range el.ep.Rules { // the catalog's: an override may drop one
			note(path, r, 0)
		}
		for _, r := range el.rules {
			note(path, r, r.InFlight+r.Limit)
		}
	}
	for group, byPath := range caps {
		paths := slices.Sorted(maps.Keys(byPath))
		for _, p := range paths[1:] {
			if byPath[p] != byPath[paths[0]] {
				return invalid("limits "+p, "shares the %q lock with %s, at %d where %s has %d (0: none): change it on each of %s alike",
					group, paths[0], byPath[p], paths[0], byPath[paths[0]], strings.Join(paths, ", "))
			}
		}
	}
	return nil
}

// nearWrapped returns the wrapped endpoint path is a slip away from, or ""
// (path itself wrapped, or near none).
func (p *pipeline) nearWrapped(path string) string {
	p.near.mu.Lock()
	near, ok := p.near.paths[path]
	p.near.mu.Unlock()
	if ok {
		return near
	}
	if near = nearEndpoint(path); near == path {
		near = ""
	}
	p.near.mu.Lock()
	defer p.near.mu.Unlock()
	if p.near.paths == nil {
		p.near.paths = make(map[string]string)
	}
	if len(p.near.paths) < nearCacheSize {
		p.near.paths[path] = near
	}
	return near
}

// limitsFor returns how the client limits a call of path.
func (p *pipeline) limitsFor(path string) *endpointLimits {
	if el, ok := p.endpoints[path]; ok {
		return el
	}
	return p.generic
}
