// Package catalog declares every WeCom endpoint the SDK wraps, once: its
// method and path, whether it is safe to repeat, which token it needs, how its
// answers are checked, and the limits WeCom documents for it, each with its
// source.
//
// The client, the mock server, the shared tests and the table of default
// limits in LIMITS.md (written by go generate) all read this one table (see
// Endpoints). A typed method of the SDK names its endpoint by ID; an ID
// missing from the table is refused, and a test fails on every ID constant
// the table does not declare.
//
// Limits are [Rule] values: a scope (per corp and API, per customer, per app,
// per source IP, ...) and a cap (calls in flight, or calls started per
// minute, hour, or China Standard Time day or month). The client overrides
// them with wecom.WithLimits and wecom.WithRule.
package catalog

import (
	"fmt"
	"net/http"
)

// ID names an endpoint: it is the endpoint's URL path.
type ID string

// Path returns the endpoint's URL path.
func (id ID) Path() string { return string(id) }

// Token says which token an endpoint's calls carry.
type Token int

// The tokens an endpoint may need.
const (
	// CorpToken is an app's access_token (gettoken with corpid and secret).
	CorpToken Token = iota
	// NoToken: the call carries no token (gettoken itself).
	NoToken
	// SuiteToken is a third-party suite_access_token.
	SuiteToken
	// ProviderToken is a service provider's provider_access_token.
	ProviderToken
	// RobotKey is a group robot's webhook key (the key of its webhook
	// URL): a credential of its own, carried in the query as "key", with
	// no corp, secret or token behind it.
	RobotKey
)

// String names the token.
func (t Token) String() string {
	switch t {
	case CorpToken:
		return "access_token"
	case NoToken:
		return "none"
	case SuiteToken:
		return "suite_access_token"
	case ProviderToken:
		return "provider_access_token"
	case RobotKey:
		return "key"
	}
	return fmt.Sprintf("Token(%d)", int(t))
}

// Endpoint is one WeCom API as the SDK calls it.
type Endpoint struct {
	// ID is the endpoint's path, such as "/cgi-bin/tag/create".
	ID ID
	// Method is http.MethodGet or http.MethodPost.
	Method string
	// Doc is the number of its page in WeCom's documentation
	// (https://developer.work.weixin.qq.com/document/path/<Doc>).
	Doc int
	// Repeatable: a call may be sent again after a failure whose outcome is
	// unknown (system busy, HTTP 5xx, a lost answer) without doing twice
	// what it did once.
	Repeatable bool
	// Token is the token its calls carry.
	Token Token
	// OmitsErrcode: WeCom may leave errcode out of a successful answer.
	// For every other endpoint an answer without errcode is not WeCom's
	// (a gateway's, a proxy's) and is never taken for a success.
	OmitsErrcode bool
	// Resource names what the rules scoped to a resource count (ScopeResource,
	// ScopeShared), such as "customer (userid, external_userid)"; empty when
	// there is none.
	Resource string
	// Keys reads from a request what its rules count per resource, per
	// member or in units (see NeedsKeys); nil when they count none of it.
	Keys KeysFunc
	// Sample is a valid request, as WeCom's page shows it: the query of a
	// GET ("tagid=12") or of a multipart upload ("type=file"), the JSON
	// body of another POST. The shared tests send it to check the pipeline
	// on every endpoint, and the mock reads it.
	Sample string
	// Body is how a POST's request is encoded: JSON unless said.
	Body Body
	// Answer is how a success answers: a JSON object unless said.
	Answer Answer
	// Rules are its default limits.
	Rules []Rule
}

// Validate reports whether e is well formed: a path, GET or POST, valid
// rules with distinct names, at most one cap in flight per key, a Resource
// for the rules that need one, Keys for the rules that count what a request
// says, and a Sample that is a request (whose Keys it says).
func (e Endpoint) Validate() error {
	if len(e.ID) < 2 || e.ID[0] != '/' {
		return fmt.Errorf("catalog: endpoint %q: the path must start with /", e.ID)
	}
	if e.Method != http.MethodGet && e.Method != http.MethodPost {
		return fmt.Errorf("catalog: endpoint %s: method %q is not GET or POST", e.ID, e.Method)
	}
	if err := ValidateRules(e.Rules); err != nil {
		return fmt.Errorf("catalog: endpoint %s: %w", e.ID, err)
	}
	for _, r := range e.Rules {
		if r.Scope.needsResource() && e.Resource == "" {
			return fmt.Errorf("catalog: endpoint %s: rule %q is %s but the endpoint names no resource", e.ID, r.Name, r.Scope)
		}
	}
	if r, ok := e.NeedsKeys(); ok && e.Keys == nil {
		return fmt.Errorf("catalog: endpoint %s: rule %q (%s) counts what a request says, but the endpoint has no Keys to read it", e.ID, r.Name, r)
	}
	if e.Sample == "" {
		return nil
	}
	q, body, err := e.SampleRequest()
	if err == nil && e.Keys != nil {
		_, err = e.Keys(q, body)
	}
	if err != nil {
		return fmt.Errorf("catalog: endpoint %s: sample: %w", e.ID, err)
	}
	return nil
}

// Rule returns the rule named name, if the endpoint has one.
func (e Endpoint) Rule(name string) (Rule, bool) {
	for _, r := range e.Rules {
		if r.Name == name {
			return r, true
		}
	}
	return Rule{}, false
}

// Lookup returns the endpoint whose path is path, from a new copy of the
// table.
func Lookup(path string) (Endpoint, bool) {
	for _, e := range Endpoints() {
		if string(e.ID) == path {
			return e, true
		}
	}
	return Endpoint{}, false
}

// Generic returns the rules of a path the catalog does not declare, as
// Client.Do calls it: WeCom's limits for every API.
func Generic() []Rule { return base() }
