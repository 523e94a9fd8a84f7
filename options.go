// The options of a Client (and a Robot): its transport, limits, retries,
// logging and observers, credentials, learned limits and calls in flight.
// Each validates its input and sets the config (config.go).

package wecom

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

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
			{&o.limits.PerMonth, &l.PerMonth},
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
		c.table = nil
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
// from, as every client sharing the limiter backend and that IP names it:
// WithEgress("203.0.113.7"). It turns on WeCom's per-IP limits
// (catalog.ScopeIP: 20,000 calls a minute and 600,000 an hour per API, or
// what WithIPLimits sets, counted across every corp served from the IP),
// which a fleet serving several corps from one IP (a Registry's) can
// reach. Without it they are not applied. They live on keys of their own,
// named by the IP and the API, so each call takes one more acquisition (a
// round trip with the Redis backend), after its other limits.
func WithEgress(name string) Option {
	return func(c *config) error {
		if name == "" || strings.ContainsAny(name, " \t\r\n{}|") {
			return invalid("egress", "%q is empty or holds a space, brace or bar", name)
		}
		c.egress = name
		return nil
	}
}

// WithIPLimits sets WeCom's limits per source IP and API, which every
// endpoint has (catalog.RuleIPPerMinute and catalog.RuleIPPerHour, by
// default catalog.IPPerMinute and catalog.IPPerHour): a service provider's
// third-party apps give catalog.ThirdPartyIPPerMinute and
// catalog.ThirdPartyIPPerHour (the default of NewInstallations' clients).
// A zero keeps the limit in force. They apply only with WithEgress;
// WithRule and WithoutRule of one path still change that path's.
func WithIPLimits(perMinute, perHour int) Option {
	return func(c *config) error {
		if perMinute < 0 || perHour < 0 {
			return invalid("IP limits", "%d a minute, %d an hour: give positive numbers, or 0 to keep the one in force", perMinute, perHour)
		}
		for i, n := range [2]int{perMinute, perHour} {
			if n > 0 {
				c.ipLimits[i] = n
			}
		}
		c.table = nil
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

// WithAdaptiveLimits sets how limits are learned from WeCom's 45033 answers
// (on by default, with the zero throttle.AIMD: a drop to 90% of the slots a
// refused call was granted under, by at least one, and one more slot after
// each quiet minute). The learned limits are kept in the limiter backend
// when it keeps them (throttle.LimitStore: Memory and Redis do), so that
// every client sharing it learns at once; otherwise in this client.
func WithAdaptiveLimits(a throttle.AIMD) Option {
	return func(c *config) error {
		if a.Backoff < 0 || a.Backoff >= 1 || a.Quiet < 0 {
			return invalid("adaptive limits", "backoff %v not in [0, 1) or negative quiet period %s", a.Backoff, a.Quiet)
		}
		c.adaptive = adaptive{aimd: a}
		return nil
	}
}

// WithoutAdaptiveLimits turns learning off: the configured limits hold
// whatever WeCom answers.
func WithoutAdaptiveLimits() Option {
	return func(c *config) error {
		c.adaptive.off = true
		return nil
	}
}

// WithStallObserver sets a hook told of every call's long waits for its
// limits (see StallObserver). Whether or not one is set, the client logs
// each stall at Info once per limiter key, until that stall ends.
func WithStallObserver(o StallObserver) Option {
	return func(c *config) error {
		if o == nil {
			return invalid("stall observer", "nil")
		}
		c.stallObserver = o
		return nil
	}
}

// WithAbandonedHold sets how long the concurrency slots of an abandoned call
// (sent, and no answer came: the attempt timeout fired or the connection
// broke) stay taken, from the moment it was given up, because it may still be
// running at WeCom. They are not released and not renewed, and free
// themselves when the hold ends. The default is the lease TTL
// (WithLeaseTTL). A retry of the call waits for the hold of its per-resource
// slot, so it never overlaps the abandoned attempt on the same customer.
func WithAbandonedHold(d time.Duration) Option {
	return func(c *config) error {
		if d < 100*time.Millisecond {
			return invalid("abandoned hold", "%s is under 100ms", d)
		}
		c.abandonedHold = d
		return nil
	}
}

// WithTokenStore sets where tokens are cached (default: a private
// MemoryTokenStore). Clients and processes sharing a store share tokens.
func WithTokenStore(s TokenStore) Option {
	return func(c *config) error {
		if s == nil {
			return invalid("token store", "nil")
		}
		c.tokenStore = s
		return nil
	}
}

// WithTokenSource makes the client take tokens from src instead of calling
// gettoken. The secret may then be empty.
func WithTokenSource(src TokenSource) Option {
	return func(c *config) error {
		if src == nil {
			return invalid("token source", "nil")
		}
		c.tokenSource = src
		return nil
	}
}

// WithTokenRefreshAhead sets how long before expiry a token is refreshed
// (default 5 minutes, less a random up to 20% so that processes spread out).
func WithTokenRefreshAhead(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalid("token refresh ahead", "%s is negative", d)
		}
		c.refreshAhead = d
		return nil
	}
}

// WithBadCredentialsBackoff sets how long the client refuses to call gettoken
// again after it answered 40001, 40013 or 40091 (default one minute): WeCom
// bans an IP that repeats bad secrets.
func WithBadCredentialsBackoff(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return invalid("bad credentials backoff", "%s is not positive", d)
		}
		c.badFor = d
		return nil
	}
}
