package wecom

import (
	"context"
	"net/url"
	"strings"
)

// Client calls the WeCom server API for one app of one corp. It is safe for
// concurrent use and cheap to create (New starts no goroutine): run one
// Client per (corp, app) and let them share one limiter backend, one token
// store and one HTTP transport through the options, as a Registry does for
// many corps. While it works it runs
// some: an attempt whose caller can give up runs in a goroutine and goes on
// after the caller left until WeCom answers (see Drain); a token or ticket
// fetch, a refresh ahead of expiry included, runs in one its callers
// share; and a call's leases are renewed from a timer.
type Client struct {
	p        *pipeline      // every call goes through it
	common   service        // what the services share (go-github's common)
	appChats AppChatService // the one service with state of its own

	// Tags calls the contact tag (通讯录标签) APIs.
	Tags *TagService
	// CustomerTags calls the customer-contact corp tag (客户联系企业标签) APIs.
	CustomerTags *CustomerTagService
	// Customers calls the customer contact (客户联系) APIs about customers.
	Customers *CustomerService
	// Media uploads and downloads files (素材).
	Media *MediaService
	// Messages sends app messages (应用消息).
	Messages *MessageService
	// AppChats creates app group chats (群聊会话) and posts to them.
	AppChats *AppChatService
	// Users reads and writes the directory's members (通讯录成员).
	Users *UserService
	// Departments reads and writes the directory's departments (部门).
	Departments *DepartmentService
	// Jobs runs the directory's asynchronous batch jobs (异步批量接口):
	// members and departments from a CSV, waited on by polling or by the
	// batch_job_result callback.
	Jobs *JobService
	// Auth signs members and visitors in (身份验证): the OAuth and web
	// login URLs, who a code signed in, a member's sensitive fields.
	Auth *AuthService
}

// New returns a client for the app whose secret is given, in the corp whose id
// is given. Without options it calls DefaultBaseURL through a transport of its
// own (pass one to WithTransport to share connections among clients), throttles with a private in-process limiter and caches
// tokens in memory.
func New(corpID, secret string, opts ...Option) (*Client, error) {
	cfg, err := newConfig(corpID, secret, opts)
	if err != nil {
		return nil, err
	}
	return newClient(cfg)
}

// newClient returns the client of cfg, once its corp and credentials are
// checked. Its services share one struct, so that a client is few
// allocations (a Registry makes one per corp).
func newClient(cfg *config) (*Client, error) {
	if err := validID("corp id", cfg.corpID); err != nil {
		return nil, err
	}
	switch {
	case cfg.secret == "" && cfg.tokenSource == nil:
		return nil, invalid("secret", "empty (give a secret, or WithTokenSource)")
	case cfg.secret == "" && cfg.agentID == 0:
		return nil, invalid("agent id", "required with a token source and no secret, to keep apps' tokens apart")
	}
	p, err := newPipeline(cfg)
	if err != nil {
		return nil, err
	}
	c := &Client{p: p, common: service{p: p}}
	c.Tags = (*TagService)(&c.common)
	c.CustomerTags = (*CustomerTagService)(&c.common)
	c.Customers = (*CustomerService)(&c.common)
	c.Media = (*MediaService)(&c.common)
	c.Messages = (*MessageService)(&c.common)
	c.appChats.p = p
	c.AppChats = &c.appChats
	c.Users = (*UserService)(&c.common)
	c.Departments = (*DepartmentService)(&c.common)
	c.Auth = (*AuthService)(&c.common)
	c.Jobs = (*JobService)(&c.common)
	return c, nil
}

// Drain waits until every attempt of the client that may outlive its caller
// has ended, or until ctx ends (then it returns ctx.Err()). An attempt whose
// caller gave up goes on until WeCom answers or the attempt timeout fires,
// and gives its slots back only then; a program that is shutting down calls
// Drain (with a deadline) after its last call returns, so that the slots
// those attempts hold go back to the fleet instead of waiting for their TTL.
func (c *Client) Drain(ctx context.Context) error { return c.p.background.wait(ctx) }

// CorpID returns the corp id the client calls for.
func (c *Client) CorpID() string { return c.p.cfg.corpID }

// Do calls an API the SDK does not wrap, through the same pipeline as every
// typed method: limits (DefaultLimits of path, or its override), token,
// retries, errors. method is GET or POST; the access_token is added to query;
// body (POST only) is sent as JSON; the answer is decoded into out if out is
// not nil. GETs are retried after -1 and transport errors; POSTs are not, as
// Do cannot know they are safe to repeat.
//
// A path the SDK wraps keeps what the catalog says of it: its method,
// whether it is safe to repeat, and the limits it counts per resource (the
// customer mark_tag edits), per member or in units, read from query and
// body by the endpoint's Keys as for its typed method. A request that does
// not say what they count is refused, as is a path without Keys whose
// limits (added by WithRule, say) count per resource, per member or in
// units: the error names the rule, and nothing is sent. Do also refuses a
// path a slip or two away from a wrapped one (another case, a doubled or
// trailing slash), which would escape that endpoint's limits.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	return c.p.perform(ctx, &call{method: method, path: path, query: query, body: body, out: out})
}

// validID checks an id that names keys: not empty, no space, brace or bar.
func validID(what, id string) error {
	if id == "" || strings.ContainsAny(id, " \t\r\n{}|") {
		return invalid(what, "%q is empty or holds a space, brace or bar", id)
	}
	return nil
}
