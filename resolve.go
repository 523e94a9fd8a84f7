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
		cl.omitsErrcode = el.ep.OmitsErrcode || omitsErrcode(cl.path)
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
// declare), or nil for none. A kind the client was not given fails: never
// the corp's access_token in its place.
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
	return nil, invalid("credential", "%s carries a %s, which the client was not given (WithSuite, WithProvider, NewRobot)", e.ID, e.Token)
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
