// The options of a Client for its transport, limits, retries, logging and
// observer. The options of tokens, learned limits, calls in flight and
// stalls live beside their concerns (token.go, adapt.go, inflight.go,
// stall.go).

package wecom

import (
	"cmp"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// DefaultBaseURL is WeCom's API endpoint.
const DefaultBaseURL = "https://qyapi.weixin.qq.com"

// Option configures a Client. Options validate their input: New fails on a bad
// one.
type Option func(*config) error

// config is what the options set, with its defaults (newConfig); New
// validates it and the pipeline reads it, never changing it.
type config struct {
	corpID, secret string
	agentID        int
	baseURL        string
	http           *resty.Client
	limiter        throttle.Backend
	overrides      map[string]*override
	egress         string
	now            func() time.Time
	retry          RetryPolicy
	logger         *slog.Logger
	observer       Observer
	stallObserver  StallObserver
	// waitOnRateLimit: a call waits out a cooldown or a spent day when its
	// deadline allows, rather than failing at once.
	waitOnRateLimit bool
	attemptTimeout  time.Duration
	leaseTTL        time.Duration
	abandonedHold   time.Duration // 0: leaseTTL
	adaptive        adaptive
	// The corp's access token: where it is kept, or where it comes from.
	tokenStore           TokenStore
	tokenSource          TokenSource
	refreshAhead, badFor time.Duration
	suite                *suiteConfig    // WithSuite, or nil
	provider             *providerConfig // WithProvider, or nil
	robotKey             string          // a Robot's webhook key, or ""
}

// newConfig returns the defaults with opts applied.
func newConfig(corpID, secret string, opts []Option) (*config, error) {
	c := &config{
		corpID:         corpID,
		secret:         secret,
		baseURL:        DefaultBaseURL,
		overrides:      make(map[string]*override),
		now:            time.Now,
		retry:          DefaultRetryPolicy(),
		logger:         slog.New(slog.DiscardHandler),
		attemptTimeout: 30 * time.Second,
		leaseTTL:       DefaultLeaseTTL,
		tokenStore:     NewMemoryTokenStore(),
		refreshAhead:   5 * time.Minute,
		badFor:         time.Minute,
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("option", "nil")
		}
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	if c.http == nil {
		c.http = newResty(&http.Client{Transport: defaultTransport()})
	}
	if c.limiter == nil {
		c.limiter = throttle.NewMemory()
	}
	return c, nil
}

// holdFor is how long the slots of an abandoned call stay taken.
func (c *config) holdFor() time.Duration { return cmp.Or(c.abandonedHold, c.leaseTTL) }

// fetchTimeout bounds a token fetch, its retries included.
func (c *config) fetchTimeout() time.Duration { return 2*c.attemptTimeout + 15*time.Second }

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
	r.SetPreRequestHook(streamBody) // a file goes as it is read
	return r
}

type quietLogger struct{}

func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Debugf(string, ...any) {}

// WithBaseURL sets the API endpoint (default DefaultBaseURL), for a proxy or a
// mock server.
func WithBaseURL(u string) Option {
	return func(c *config) error {
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
	return func(c *config) error {
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
	return func(c *config) error {
		if rt == nil {
			return invalid("transport", "nil")
		}
		c.http = newResty(&http.Client{Transport: rt})
		return nil
	}
}

// WithAgentID sets the app's agent id, sent where an API asks for it.
func WithAgentID(id int) Option {
	return func(c *config) error {
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
	return func(c *config) error {
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

// WithKeys tells the client how to read, from the requests of a path the
// SDK does not wrap, what its rules count per resource, per member or in
// units (see catalog.KeysFunc), so that Do enforces the rules WithRule
// gives it. Without it, New refuses such a rule on such a path; a wrapped
// path reads its keys with the catalog's function, and New refuses
// WithKeys on it.
func WithKeys(path string, keys catalog.KeysFunc) Option {
	return withOverride(path, func(o *override) { o.keys = keys })
}

// WithoutRule removes the limit named name from one API path. New fails if
// the path has no such rule.
func WithoutRule(path, name string) Option {
	return withOverride(path, func(o *override) { o.without = append(o.without, name) })
}

func withOverride(path string, change func(*override)) Option {
	return func(c *config) error {
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
	return func(c *config) error {
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
	return func(c *config) error {
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
	return func(c *config) error {
		if l == nil {
			return invalid("logger", "nil")
		}
		c.logger = l
		return nil
	}
}

// WithObserver sets a hook called after every attempt.
func WithObserver(o Observer) Option {
	return func(c *config) error {
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
	return func(c *config) error {
		c.waitOnRateLimit = wait
		return nil
	}
}

// WithAttemptTimeout bounds each HTTP attempt (default 30s). For a file
// uploaded or downloaded (Media) it bounds the wait for the answer and
// every pause of the transfer, not the whole transfer, and the caller's own
// reader or writer taking its time is no pause.
func WithAttemptTimeout(d time.Duration) Option {
	return func(c *config) error {
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
	return func(c *config) error {
		if d < 100*time.Millisecond {
			return invalid("lease TTL", "%s is under 100ms", d)
		}
		c.leaseTTL = d
		return nil
	}
}
