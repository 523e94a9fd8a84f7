// The configuration of a Client or a Robot: what the options set, with
// its defaults, read by the pipeline and never changed once New returns.

package wecom

import (
	"cmp"
	"log/slog"
	"net/http"
	"slices"
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
	// table is the limits resolved ahead (a Registry's, shared by its
	// clients); nil: New resolves them. Every option that changes them
	// clears it.
	table  *limitTable
	egress string
	// ipLimits are WeCom's per-IP limits per minute and per hour
	// (WithIPLimits); 0 keeps the catalog's.
	ipLimits      [2]int
	now           func() time.Time
	retry         RetryPolicy
	logger        *slog.Logger
	observer      Observer
	stallObserver StallObserver
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
	suite                *suiteConfig    // NewSuite's, or nil
	provider             *providerConfig // NewProvider's, or nil
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

// clone returns a copy of c whose overrides can be changed without
// changing c's.
func (c *config) clone() *config {
	cp := *c
	cp.overrides = make(map[string]*override, len(c.overrides))
	for path, o := range c.overrides {
		o := *o
		o.rules, o.without = slices.Clip(o.rules), slices.Clip(o.without)
		cp.overrides[path] = &o
	}
	return &cp
}

// ipRules returns rules with WeCom's per-IP limits as WithIPLimits set
// them.
func (c *config) ipRules(rules []catalog.Rule) []catalog.Rule {
	if c.ipLimits == [2]int{} {
		return rules
	}
	return catalog.SetIPLimits(rules, c.ipLimits[0], c.ipLimits[1], "overridden")
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

func (quietLogger) Warnf(string, ...any) {}

func (quietLogger) Debugf(string, ...any) {}

// adaptive is what the learning options asked for, until New applies it.
type adaptive struct {
	off  bool
	aimd throttle.AIMD
}

// suiteConfig is the suite NewSuite was given.
type suiteConfig struct{ id, secret string }

// providerConfig is the provider NewProvider was given.
type providerConfig struct{ corpID, secret string }
