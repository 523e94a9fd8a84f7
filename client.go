package wecom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-resty/resty/v2"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// DefaultBaseURL is WeCom's API endpoint.
const DefaultBaseURL = "https://qyapi.weixin.qq.com"

// Client calls the WeCom server API for one app of one corp. It is safe for
// concurrent use, cheap to create, and starts no goroutine: run one Client per
// (corp, app) and let them share one limiter backend, one token store and one
// HTTP transport through the options.
type Client struct {
	corpID          string
	secret          string
	agentID         int
	baseURL         string
	http            *resty.Client
	limiter         throttle.Backend
	tokens          *tokenManager
	overrides       map[string]*override
	endpoints       map[string]*endpointLimits
	generic         *endpointLimits
	egress          string
	now             func() time.Time
	retry           RetryPolicy
	logger          *slog.Logger
	observer        Observer
	stallObserver   StallObserver
	stalls          stallLog
	waitOnRateLimit bool
	attemptTimeout  time.Duration
	leaseTTLOpt     time.Duration
	abandonedHold   time.Duration
	adaptive        adaptive
	learner         *throttle.Learner
	blocks          blockLog
	near            nearCache
	background      tracker

	// Tags calls the contact tag (通讯录标签) APIs.
	Tags *TagService
	// CustomerTags calls the customer-contact corp tag (客户联系企业标签) APIs.
	CustomerTags *CustomerTagService
	// Customers calls the customer contact (客户联系) APIs about customers.
	Customers *CustomerService
}

type service struct{ client *Client }

// Option configures a Client. Options validate their input: New fails on a bad
// one.
type Option func(*Client) error

// RetryPolicy bounds the SDK's retries. Retries wait with exponential backoff
// and jitter, and never outlast the caller's context. A field left at zero
// takes its default, so RetryPolicy{MaxRetries: 5} changes only that; a
// count that means "never retry" is spelled NoRetries.
type RetryPolicy struct {
	// MaxRetries bounds retries after -1 (system busy), 6000, HTTP 5xx,
	// malformed answers and transport errors. These retries happen only for
	// calls that are safe to repeat (GETs and idempotent POSTs). Default 3.
	MaxRetries int
	// MaxConcurrencyRetries bounds retries after 45033, which WeCom answers
	// without doing anything, so every call may be retried. Default 10.
	MaxConcurrencyRetries int
	// InitialInterval and MaxInterval shape the backoff. Defaults 200ms and 5s.
	InitialInterval time.Duration
	MaxInterval     time.Duration
}

// NoRetries, as MaxRetries or MaxConcurrencyRetries, means no retry at all.
const NoRetries = -1

// DefaultRetryPolicy returns the policy a Client uses unless told otherwise.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxRetries: 3, MaxConcurrencyRetries: 10, InitialInterval: 200 * time.Millisecond, MaxInterval: 5 * time.Second}
}

// withDefaults fills p's zero fields from DefaultRetryPolicy and turns
// NoRetries into a count of 0.
func (p RetryPolicy) withDefaults() (RetryPolicy, error) {
	d := DefaultRetryPolicy()
	count := func(n, def int) (int, bool) {
		switch {
		case n == 0:
			return def, true
		case n == NoRetries:
			return 0, true
		}
		return n, n > 0
	}
	var ok1, ok2 bool
	p.MaxRetries, ok1 = count(p.MaxRetries, d.MaxRetries)
	p.MaxConcurrencyRetries, ok2 = count(p.MaxConcurrencyRetries, d.MaxConcurrencyRetries)
	if p.InitialInterval == 0 {
		p.InitialInterval = d.InitialInterval
		if p.MaxInterval > 0 {
			p.InitialInterval = min(p.InitialInterval, p.MaxInterval)
		}
	}
	if p.MaxInterval == 0 {
		p.MaxInterval = max(d.MaxInterval, p.InitialInterval)
	}
	if !ok1 || !ok2 || p.InitialInterval < 0 || p.MaxInterval < p.InitialInterval {
		return p, invalid("retry policy", "%+v: counts must be positive, 0 (default) or NoRetries; intervals positive (0: default) and ordered", p)
	}
	return p, nil
}

func (p RetryPolicy) newBackOff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = p.InitialInterval
	b.MaxInterval = p.MaxInterval
	b.RandomizationFactor = 0.5
	b.Multiplier = 2
	b.MaxElapsedTime = 0 // bounded by attempts and ctx instead
	b.Reset()
	return b
}

// Attempt describes one attempt of a call, for an Observer.
type Attempt struct {
	Method string
	Path   string
	// Number is 1 for the first attempt of a call, 2 for its first retry, ...
	Number int
	// ErrCode is WeCom's errcode (0 on success and when there was no answer).
	ErrCode int
	// Err is the attempt's error, nil on success. It never holds a token.
	Err error
	// Duration is the time from sending the request to its answer.
	Duration time.Duration
	// LeaseWait is the time spent waiting for the limiter before sending.
	LeaseWait time.Duration
	// Detached: the caller had given up (its context ended) before the
	// answer; the attempt went on without it, and its leases went back when
	// the answer came.
	Detached bool
	// Abandoned: the request was sent and no answer came (the attempt
	// timeout fired, or the connection broke). The call may still be running
	// at WeCom, so its concurrency slots were neither released nor renewed:
	// they stay taken for the abandoned hold (WithAbandonedHold), capacity
	// the other calls lose meanwhile.
	Abandoned bool
	// LimitChanges are the changes of the calls-in-flight limit of the API
	// learned from WeCom (see WithAdaptiveLimits) that this attempt noticed:
	// before it was sent, and from its 45033, in order.
	LimitChanges []LimitChange
}

// Observer is called after every attempt of every call, gettoken included, in
// the calling goroutine, or, for an attempt that outlived its caller
// (Attempt.Detached), in the goroutine that finished it. It must be safe for
// concurrent use. If it panics, the call's leases are still released; the
// panic reaches the caller, or is logged when the caller has gone.
type Observer func(ctx context.Context, a Attempt)

// WithBaseURL sets the API endpoint (default DefaultBaseURL), for a proxy or a
// mock server.
func WithBaseURL(u string) Option {
	return func(c *Client) error {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return invalid("base URL", "%q is not an http(s) URL", u)
		}
		c.baseURL = strings.TrimRight(u, "/")
		return nil
	}
}

// WithHTTPClient sets the HTTP client. It is copied, never modified. A nil
// Transport means http.DefaultTransport, as in net/http.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return invalid("HTTP client", "nil")
		}
		cp := *hc
		if cp.Transport == nil {
			cp.Transport = http.DefaultTransport
		}
		c.http = newResty(&cp)
		return nil
	}
}

// WithTransport sets the HTTP transport, shared as it is (share one among
// clients).
func WithTransport(rt http.RoundTripper) Option {
	return func(c *Client) error {
		if rt == nil {
			return invalid("transport", "nil")
		}
		c.http = newResty(&http.Client{Transport: rt})
		return nil
	}
}

// WithAgentID sets the app's agent id, sent where an API asks for it.
func WithAgentID(id int) Option {
	return func(c *Client) error {
		if id <= 0 {
			return invalid("agent id", "%d is not positive", id)
		}
		c.agentID = id
		return nil
	}
}

// WithLimiter sets the limiter backend (default: a private throttle.Memory).
// Clients sharing a backend share every limit; use one backend per process,
// or a distributed one for a fleet.
func WithLimiter(b throttle.Backend) Option {
	return func(c *Client) error {
		if b == nil {
			return invalid("limiter", "nil")
		}
		c.limiter = b
		return nil
	}
}

// WithLimits changes the limits of one API path, starting from its defaults
// (DefaultLimits): a field of l left zero keeps the default, NoLimit removes
// it. A path the SDK does not wrap may be overridden for Do; a path a slip or
// two away from one it wraps (letters, the case, the /cgi-bin prefix, a
// trailing slash) makes New fail, as it would change nothing. Several
// WithLimits of one path add up, field by field. The APIs that share a lock
// (mark_tag and remark, per customer) must be changed alike, or New fails.
func WithLimits(path string, l Limits) Option {
	return withOverride(path, func(o *override) {
		for _, f := range []struct{ to, from *int }{
			{&o.limits.Concurrency, &l.Concurrency}, {&o.limits.PerResource, &l.PerResource},
			{&o.limits.PerMinute, &l.PerMinute}, {&o.limits.PerHour, &l.PerHour}, {&o.limits.PerDay, &l.PerDay},
		} {
			if *f.from != 0 {
				*f.to = *f.from
			}
		}
		if l.BlockFor != 0 {
			o.limits.BlockFor = l.BlockFor
		}
	})
}

// WithRule adds a limit to one API path, or replaces the one of the same
// name (see catalog.Rule): any scope and cap WeCom documents, such as a
// daily quota or a lock shared with other APIs.
func WithRule(path string, r catalog.Rule) Option {
	return withOverride(path, func(o *override) { o.rules = append(o.rules, r) })
}

// WithoutRule removes the limit named name from one API path. New fails if
// the path has no such rule.
func WithoutRule(path, name string) Option {
	return withOverride(path, func(o *override) { o.without = append(o.without, name) })
}

func withOverride(path string, change func(*override)) Option {
	return func(c *Client) error {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?#") {
			return invalid("limits path", "%q is not an absolute path without query", path)
		}
		o := c.overrides[path]
		if o == nil {
			o = &override{}
			c.overrides[path] = o
		}
		change(o)
		return nil
	}
}

// WithEgress names the source IP (or NAT gateway) the client's calls leave
// from, as every client sharing the limiter backend and that IP names it.
// It turns on WeCom's per-IP limits (catalog.ScopeIP: 20,000 calls a minute
// and 600,000 an hour per API, counted across every corp served from the
// IP), which a fleet serving several corps from one IP can reach. Without
// it they are not applied. They live on keys of their own, so each call
// takes one more acquisition (a round trip with the Redis backend).
func WithEgress(name string) Option {
	return func(c *Client) error {
		if name == "" || strings.ContainsAny(name, " \t\r\n{}|") {
			return invalid("egress", "%q is empty or holds a space, brace or bar", name)
		}
		c.egress = name
		return nil
	}
}

// WithRetryPolicy sets the retry policy (default DefaultRetryPolicy); zero
// fields take their defaults.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(c *Client) error {
		p, err := p.withDefaults()
		if err != nil {
			return err
		}
		c.retry = p
		return nil
	}
}

// WithLogger sets the logger (default: discard). The SDK logs retries,
// cooldowns and token refreshes; never a token or a secret.
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) error {
		if l == nil {
			return invalid("logger", "nil")
		}
		c.logger = l
		return nil
	}
}

// WithObserver sets a hook called after every attempt.
func WithObserver(o Observer) Option {
	return func(c *Client) error {
		if o == nil {
			return invalid("observer", "nil")
		}
		c.observer = o
		return nil
	}
}

// WithWaitOnRateLimit makes calls to an API that is cooling down after a 45009
// wait for the block to end when their context allows it, instead of failing at
// once with a *RateLimitError (the default). A call whose deadline comes before
// the end of the block still fails at once.
func WithWaitOnRateLimit(wait bool) Option {
	return func(c *Client) error {
		c.waitOnRateLimit = wait
		return nil
	}
}

// WithAttemptTimeout bounds each HTTP attempt (default 30s).
func WithAttemptTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return invalid("attempt timeout", "%s is not positive", d)
		}
		c.attemptTimeout = d
		return nil
	}
}

// WithLeaseTTL sets how long a concurrency slot stays taken when its holder
// dies without releasing it (default DefaultLeaseTTL). A live call renews its
// slots every half TTL, so a slow call never loses them; a shorter TTL frees the
// slots of a crashed process sooner, at the cost of renewals for calls longer
// than half of it.
func WithLeaseTTL(d time.Duration) Option {
	return func(c *Client) error {
		if d < 100*time.Millisecond {
			return invalid("lease TTL", "%s is under 100ms", d)
		}
		c.leaseTTLOpt = d
		return nil
	}
}

// New returns a client for the app whose secret is given, in the corp whose id
// is given. Without options it calls DefaultBaseURL through a transport of its
// own (pass one to WithTransport to share connections among clients), throttles with a private in-process limiter and caches
// tokens in memory.
func New(corpID, secret string, opts ...Option) (*Client, error) {
	c := &Client{
		corpID:         corpID,
		secret:         secret,
		baseURL:        DefaultBaseURL,
		overrides:      make(map[string]*override),
		now:            time.Now,
		retry:          DefaultRetryPolicy(),
		logger:         slog.New(slog.DiscardHandler),
		attemptTimeout: 30 * time.Second,
		leaseTTLOpt:    DefaultLeaseTTL,
	}
	c.tokens = &tokenManager{c: c, store: NewMemoryTokenStore(), refreshAhead: 5 * time.Minute, badFor: time.Minute}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("option", "nil")
		}
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	switch {
	case corpID == "" || strings.ContainsAny(corpID, " \t\r\n{}|"):
		return nil, invalid("corp id", "%q is empty or holds a space, brace or bar", corpID)
	case secret == "" && c.tokens.source == nil:
		return nil, invalid("secret", "empty (give a secret, or WithTokenSource)")
	case secret == "" && c.agentID == 0:
		return nil, invalid("agent id", "required with a token source and no secret, to keep apps' tokens apart")
	}
	if c.http == nil {
		c.http = newResty(&http.Client{Transport: defaultTransport()})
	}
	if c.limiter == nil {
		c.limiter = throttle.NewMemory()
	}
	c.tokens.init()
	c.learner = c.newLearner()
	if err := c.resolveLimits(); err != nil {
		return nil, err
	}
	c.Tags = &TagService{client: c}
	c.CustomerTags = &CustomerTagService{client: c}
	c.Customers = &CustomerService{client: c}
	return c, nil
}

// CorpID returns the corp id the client calls for.
func (c *Client) CorpID() string { return c.corpID }

// defaultTransport is http.DefaultTransport with enough idle connections per
// host for the calls in flight: the standard 2 would reopen a TCP (and TLS)
// connection for most calls of a busy client. When http.DefaultTransport is
// not an *http.Transport (httpmock.Activate, a tracing wrapper), it is used
// as it is.
func defaultTransport() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

func newResty(hc *http.Client) *resty.Client {
	r := resty.NewWithClient(hc)
	r.SetLogger(quietLogger{}) // resty's own logs may carry URLs with tokens
	r.SetRetryCount(0)
	return r
}

type quietLogger struct{}

func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}

// call is one API call as the pipeline sees it. A typed method names its
// endpoint (id) and the pipeline takes the rest from the catalog; Do gives
// method and path.
type call struct {
	id     catalog.ID
	method string
	path   string
	query  url.Values
	body   any
	out    any
	// resource is what per-resource rules count (a customer for mark_tag).
	resource string
	// members are the members a call reaches, for per-member rules.
	members []string
	// weight is the units a call counts against weighted rules (0: 1).
	weight int
	// Set by each attempt's acquisition: the calls-in-flight cap of the
	// API it was granted under and the configured one (0: none), and a
	// change of the learned limit to report.
	apiLimit, apiConfigured int
	limitChanges            []LimitChange
	// block is how long the API is left alone after the 45009 an attempt
	// got.
	block time.Duration

	// Set by prepare, from the catalog for a typed call.
	idempotent   bool
	noToken      bool
	omitsErrcode bool
}

// prepare completes a call from the client's table and returns its limits.
// A typed method naming an endpoint the catalog does not declare is a bug
// of the SDK; it fails here, and the shared endpoint tests catch it.
func (c *Client) prepare(cl *call) (*endpointLimits, error) {
	if cl.id == "" {
		el := c.limitsFor(cl.path)
		cl.idempotent = cl.method == http.MethodGet
		if el.ep.Method != "" { // a wrapped endpoint: the catalog knows
			cl.idempotent = el.ep.Repeatable
		}
		cl.omitsErrcode = el.ep.OmitsErrcode || omitsErrcode(cl.path)
		return el, nil
	}
	el, ok := c.endpoints[string(cl.id)]
	if !ok || el.ep.Method == "" {
		return nil, fmt.Errorf("wecom: %s is not in the catalog", cl.id)
	}
	cl.path, cl.method = string(cl.id), el.ep.Method
	cl.idempotent = el.ep.Repeatable
	cl.noToken = el.ep.Token == catalog.NoToken
	cl.omitsErrcode = el.ep.OmitsErrcode
	return el, nil
}

// Do calls an API the SDK does not wrap, through the same pipeline as every
// typed method: limits (DefaultLimits of path, or its override), token,
// retries, errors. method is GET or POST; the access_token is added to query;
// body (POST only) is sent as JSON; the answer is decoded into out if out is
// not nil. GETs are retried after -1 and transport errors; POSTs are not, as
// Do cannot know they are safe to repeat.
//
// A path the SDK wraps keeps what the catalog says of it: its method, and
// whether it is safe to repeat. Do refuses the wrapped endpoints whose limits
// count per resource (mark_tag and remark lock the customer they edit): only
// their typed methods name the resource, so a Do could edit a customer at
// the same time as them and get 45033. It also refuses a path a slip or two
// away from a wrapped one (another case, a doubled or trailing slash), which
// would escape that endpoint's limits.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	if el, ok := c.endpoints[path]; ok && el.ep.Method != "" { // wrapped
		switch {
		case el.ep.Method != method:
			return invalid("method", "%s takes %s, not %s", path, el.ep.Method, method)
		case el.ep.Resource != "":
			return invalid("path", "%s limits calls per %s: call its typed method, which names it", path, el.ep.Resource)
		}
	} else if near := c.nearWrapped(path); near != "" {
		return invalid("path", "%q is not an endpoint the SDK wraps, and would escape its limits: did you mean %q?", path, near)
	}
	switch {
	case method != http.MethodGet && method != http.MethodPost:
		return invalid("method", "%q is not GET or POST", method)
	case !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?#"):
		return invalid("path", "%q is not an absolute path without query", path)
	case query.Has("access_token"):
		return invalid("query", "access_token is added by the client")
	case method == http.MethodGet && body != nil:
		return invalid("body", "a GET has no body")
	}
	return c.do(ctx, &call{method: method, path: path, query: query, body: body, out: out})
}

// do runs a call to completion: token, leases, send, classify, retry.
func (c *Client) do(ctx context.Context, cl *call) error {
	el, err := c.prepare(cl)
	if err != nil {
		return err
	}
	var (
		bo                       = c.retry.newBackOff()
		tokenRetried             bool
		busyRetries, concRetries int
	)
	for n := 1; ; n++ {
		tok, final, err := c.attempt(ctx, cl, el, n)
		if err == nil {
			return nil
		}
		if final || ctx.Err() != nil {
			return err
		}
		var ae *APIError
		code := 0
		if errors.As(err, &ae) {
			code = ae.Code
		}
		switch {
		case isTokenCode(code) && !cl.noToken && !tokenRetried:
			tokenRetried = true
			c.logger.LogAttrs(ctx, slog.LevelInfo, "wecom: access token rejected, fetching a new one", slog.String("path", cl.path), slog.Int("errcode", code))
			c.tokens.invalidate(ctx, tok)
			continue
		case code == CodeFrequencyLimited:
			c.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: rate limited, API cooling down", slog.String("path", cl.path), slog.Duration("block", cl.block))
			rl := &RateLimitError{Path: cl.path, RetryAfter: cl.block, Err: ae}
			if c.waitOnRateLimit && !deadlineBefore(ctx, time.Now().Add(rl.RetryAfter)) && busyRetries < c.retry.MaxRetries {
				busyRetries++
				continue // the next lease waits out the cooldown
			}
			return rl
		case code == CodeConcurrencyLimited && concRetries < c.retry.MaxConcurrencyRetries:
			concRetries++
		case retryable(err) && cl.idempotent && busyRetries < c.retry.MaxRetries:
			busyRetries++
		default:
			return err
		}
		d := bo.NextBackOff()
		if deadlineBefore(ctx, time.Now().Add(d)) {
			return err
		}
		c.logger.LogAttrs(ctx, slog.LevelDebug, "wecom: retrying", slog.String("path", cl.path), slog.Int("attempt", n), slog.Int("errcode", code), slog.Duration("backoff", d))
		if werr := sleep(ctx, d); werr != nil {
			return fmt.Errorf("wecom: %s: %w (while backing off after: %w)", cl.path, werr, err)
		}
	}
}

// retryable reports whether err is a failure worth repeating for a call that is
// safe to repeat: system busy, HTTP 5xx, malformed answers, transport errors.
func retryable(err error) bool {
	if errors.Is(err, ErrSystemBusy) {
		return true
	}
	var re *ResponseError
	if errors.As(err, &re) {
		return re.StatusCode >= 500 || (re.StatusCode == http.StatusOK && !re.shape)
	}
	var ae *APIError
	var le *RateLimitError
	return !errors.As(err, &ae) && !errors.As(err, &le) && !errors.Is(err, ErrInvalidRequest)
}

// attempt sends the call once. It takes the call's leases, then the token:
// a token replaced while the call waited for a slot is not sent. It returns
// the token it sent. A call whose caller gives up after sending goes on in
// the background (see exchange). final reports an error that ends the call:
// no token could be had, the fetch having made its own retries.
func (c *Client) attempt(ctx context.Context, cl *call, el *endpointLimits, n int) (tok string, final bool, err error) {
	waitStart := time.Now()
	leases, err := c.acquire(ctx, cl, el)
	c.granted(cl, leases)
	a := Attempt{Method: cl.method, Path: cl.path, Number: n, LeaseWait: time.Since(waitStart), LimitChanges: cl.limitChanges}
	cl.limitChanges = nil
	if err != nil {
		a.Err = err
		c.observe(ctx, a)
		return "", false, err
	}
	// The leases are renewed from now on, however long the token takes.
	stop := c.keepAlive(ctx, leases)
	handedOn := false
	defer func() {
		if !handedOn { // nothing was sent: the token could not be had (or its fetch panicked), or the caller left
			stop()
			c.release(ctx, leases)
		}
	}()
	if !cl.noToken {
		if tok, err = c.tokens.token(ctx); err != nil {
			final = true
		}
	}
	if err == nil && ctx.Err() != nil { // the caller left before anything was sent
		err = fmt.Errorf("wecom: %s: %w", cl.path, ctx.Err())
	}
	if err != nil {
		handedOn = true
		stop()
		c.release(ctx, leases)
		a.Err = err
		c.observe(ctx, a)
		return tok, final, err
	}
	handedOn = true
	return tok, false, c.exchange(ctx, cl, el, leases, stop, tok, a)
}

// attemptResult is what an attempt run in the background hands its caller.
type attemptResult struct {
	a        Attempt
	panicked any // re-panicked in the caller
}

// exchange sends the call, which holds leases (renewed until stop), and
// waits for its answer. A request sent is in flight at WeCom until WeCom
// answers, whatever the caller does: when ctx ends first, exchange returns
// ctx's error at once and the attempt goes on in the background under the
// client's attempt timeout, its leases going back when the answer arrives
// (see Client.Drain). A panic in the background reaches the caller, or is
// logged when the caller has gone.
func (c *Client) exchange(ctx context.Context, cl *call, el *endpointLimits, leases []throttle.Lease, stop func(), tok string, a Attempt) error {
	if ctx.Done() == nil { // the caller cannot give up: no goroutine needed
		a = c.roundTrip(ctx, cl, el, leases, stop, tok, a)
		c.observe(ctx, a)
		return a.Err
	}
	answered := make(chan attemptResult)
	c.background.add()
	go func() {
		defer c.background.done()
		var r attemptResult
		func() {
			defer func() { r.panicked = recover() }()
			r.a = c.roundTrip(ctx, cl, el, leases, stop, tok, a)
		}()
		select {
		case answered <- r:
		case <-ctx.Done():
			if r.panicked != nil {
				c.logger.LogAttrs(ctx, slog.LevelError, "wecom: a call whose caller had gone panicked", slog.String("path", cl.path), slog.Any("panic", r.panicked))
				return
			}
			r.a.Detached = true
			c.observeDetached(ctx, r.a)
		}
	}()
	select {
	case r := <-answered:
		if r.panicked != nil {
			panic(r.panicked)
		}
		c.observe(ctx, r.a)
		return r.a.Err
	case <-ctx.Done():
		return fmt.Errorf("wecom: %s: gave up waiting for the answer (the call goes on without its caller): %w", cl.path, ctx.Err())
	}
}

// roundTrip makes the HTTP exchange of an attempt that holds leases, bounded
// by the attempt timeout and not by the caller's context, and then gives the
// leases back: at once if an answer came or the request never left, and
// otherwise (the request may be running at WeCom) only when their hold ends.
func (c *Client) roundTrip(ctx context.Context, cl *call, el *endpointLimits, leases []throttle.Lease, stop func(), tok string, a Attempt) Attempt {
	settled := false
	defer func() {
		if !settled { // a panic while the request may have left: hold, as for no answer
			stop()
			c.hold(ctx, cl.path, leases)
		}
	}()
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.attemptTimeout)
	defer cancel()
	q := make(url.Values, len(cl.query)+1)
	for k, v := range cl.query {
		q[k] = v
	}
	if !cl.noToken {
		q.Set("access_token", tok)
	}
	start := time.Now()
	unanswered, err := c.send(actx, cl, q)
	stop()
	a.Duration, a.Err = time.Since(start), err
	var ae *APIError
	if errors.As(err, &ae) {
		a.ErrCode = ae.Code
		if ae.Code == CodeConcurrencyLimited {
			if ch := c.refused(context.WithoutCancel(ctx), cl); ch != nil {
				a.LimitChanges = append(a.LimitChanges, *ch)
			}
		}
		if ae.Code == CodeFrequencyLimited {
			// Before the leases go back: nobody starts on this API until the block ends.
			cl.block = c.block(cl.path, el, c.now())
			if cerr := c.limiter.Cooldown(context.WithoutCancel(ctx), c.apiKey(cl.path), cl.block); cerr != nil {
				c.logger.LogAttrs(ctx, slog.LevelError, "wecom: could not record cooldown", slog.String("path", cl.path), slog.String("error", cerr.Error()))
			}
		}
	}
	settled = true
	if unanswered {
		a.Abandoned = c.hold(ctx, cl.path, leases)
	} else {
		c.release(ctx, leases)
	}
	return a
}

func (c *Client) observe(ctx context.Context, a Attempt) {
	if c.observer != nil {
		c.observer(ctx, a)
	}
}

// observeDetached observes an attempt whose caller has gone. A panic in the
// observer has no caller to reach: it is logged instead of ending the process.
func (c *Client) observeDetached(ctx context.Context, a Attempt) {
	defer func() {
		if p := recover(); p != nil {
			c.logger.LogAttrs(ctx, slog.LevelError, "wecom: observer panicked", slog.String("path", a.Path), slog.Any("panic", p))
		}
	}()
	c.observe(ctx, a)
}

// envelope is the part of every answer the pipeline reads.
type envelope struct {
	ErrCode *int   `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

// send makes one HTTP exchange, bounded by ctx (the attempt's), and decodes
// its answer into the error a caller sees. unanswered reports a request that
// may be running at WeCom while no answer (no HTTP status) came back: it was
// written to a connection, or the transport cannot tell.
func (c *Client) send(ctx context.Context, cl *call, q url.Values) (unanswered bool, err error) {
	var w wire
	req := c.http.R().SetContext(httptrace.WithClientTrace(ctx, w.trace())).
		SetQueryParamsFromValues(q).SetDoNotParseResponse(true)
	if cl.body != nil {
		req.SetHeader("Content-Type", "application/json").SetBody(cl.body)
	}
	resp, err := req.Execute(cl.method, c.baseURL+cl.path)
	if err != nil {
		answered := resp != nil && resp.RawResponse != nil
		sent := answered || w.mayHaveArrived()
		return sent && !answered, &TransportError{Path: cl.path, Sent: sent, Timeout: ctx.Err() != nil, Err: c.redactErr(err)}
	}
	body := resp.RawBody()
	defer body.Close()
	raw, err := io.ReadAll(io.LimitReader(body, 16<<20))
	if err != nil {
		// The answer began: WeCom is done with the call.
		return false, &TransportError{Path: cl.path, Sent: true, Timeout: ctx.Err() != nil, Err: fmt.Errorf("reading the answer: %w", c.redactErr(err))}
	}
	if resp.StatusCode() != http.StatusOK {
		return false, &ResponseError{Path: cl.path, StatusCode: resp.StatusCode()}
	}
	// errmsg, or a proxy's body, may echo the request: its token, our secret.
	err = c.redactErr(decode(cl.path, cl.omitsErrcode, raw, cl.out))
	var ae *APIError
	if errors.As(err, &ae) {
		ae.CorpID, ae.AgentID = c.corpID, c.agentID
	}
	return false, err
}

// validator is an answer type that knows what a success must carry; decode
// calls it after decoding a success into it.
type validator interface {
	validate() error
}

// omitsErrcode reports whether WeCom leaves errcode out of a successful
// answer of path, for the third-party token APIs the SDK does not wrap yet
// (catalog.Endpoint.OmitsErrcode says it of those it wraps). Every other API
// always sends errcode, so an answer without it is not WeCom's (a
// gateway's, a proxy's).
func omitsErrcode(path string) bool {
	switch path {
	case "/cgi-bin/service/get_suite_token", "/cgi-bin/service/get_corp_token", "/cgi-bin/service/get_provider_token":
		return true
	}
	return false
}

// decode reads an answer of path into out. A WeCom answer is a JSON object
// with an errcode (unless omits: the endpoint may leave it out of a
// success); a non-zero errcode is an *APIError.
// Anything else (no errcode, null, an array, a string, not JSON, or a
// success without what out must carry) is a *ResponseError: never a success.
func decode(path string, omits bool, raw []byte, out any) error {
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return &ResponseError{Path: path, StatusCode: http.StatusOK, Err: err}
	}
	switch {
	case !isObject(raw):
		return &ResponseError{Path: path, StatusCode: http.StatusOK, Err: errNotObject}
	case env.ErrCode == nil && !omits:
		return &ResponseError{Path: path, StatusCode: http.StatusOK, Err: errNoErrcode}
	case env.ErrCode != nil && *env.ErrCode != CodeOK:
		return &APIError{Code: *env.ErrCode, Message: env.ErrMsg, Path: path}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		// The envelope decoded, so the body is JSON: the answer does not
		// fit out. Sending it again would not help.
		return &ResponseError{Path: path, StatusCode: http.StatusOK, Err: err, shape: true}
	}
	if v, ok := out.(validator); ok {
		if err := v.validate(); err != nil {
			return &ResponseError{Path: path, StatusCode: http.StatusOK, Err: err}
		}
	}
	return nil
}

var (
	errNotObject = errors.New("the answer is not a JSON object")
	errNoErrcode = errors.New("the answer has no errcode: not WeCom's")
)

// isObject reports whether raw, valid JSON, is an object.
func isObject(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func deadlineBefore(ctx context.Context, at time.Time) bool {
	d, ok := ctx.Deadline()
	return ok && d.Before(at)
}
