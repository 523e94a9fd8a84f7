// The options of a Client for its transport, limits, retries, logging and
// observer. The options of tokens, learned limits, calls in flight and
// stalls live beside their concerns (token.go, adapt.go, inflight.go,
// stall.go).

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

// Option configures a Client. Options validate their input: New fails on a bad
// one.
type Option func(*Client) error

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

// WithAttemptTimeout bounds each HTTP attempt (default 30s). For a file
// uploaded or downloaded (Media) it bounds the wait for the answer and
// every pause of the transfer, not the whole transfer, and the caller's own
// reader or writer taking its time is no pause.
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
