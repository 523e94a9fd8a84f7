package wecom

import (
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// API paths the SDK wraps.
const (
	pathGetToken         = "/cgi-bin/gettoken"
	pathTagCreate        = "/cgi-bin/tag/create"
	pathTagUpdate        = "/cgi-bin/tag/update"
	pathTagDelete        = "/cgi-bin/tag/delete"
	pathTagGet           = "/cgi-bin/tag/get"
	pathTagAddUsers      = "/cgi-bin/tag/addtagusers"
	pathTagDelUsers      = "/cgi-bin/tag/deltagusers"
	pathTagList          = "/cgi-bin/tag/list"
	pathCorpTagList      = "/cgi-bin/externalcontact/get_corp_tag_list"
	pathCorpTagAdd       = "/cgi-bin/externalcontact/add_corp_tag"
	pathCorpTagEdit      = "/cgi-bin/externalcontact/edit_corp_tag"
	pathCorpTagDel       = "/cgi-bin/externalcontact/del_corp_tag"
	pathMarkTag          = "/cgi-bin/externalcontact/mark_tag"
	defaultPerMinute     = 10000
	defaultPerHour       = 150000
	defaultTagConcurrent = 5
	defaultBlockFor      = time.Minute
)

// Limits are the throttling rules of one API, per corp. They are defaults taken
// from WeCom's documentation and staff answers; WeCom may change them, so every
// one can be overridden with WithLimits.
//
// All limits of a call are taken before it is sent and, for the concurrency
// ones, given back when its answer arrives, so that the calls of every client
// sharing the limiter backend stay under them together.
type Limits struct {
	// PerMinute and PerHour cap the calls started per corp in any sliding
	// minute and hour. Zero means no such cap.
	PerMinute int
	PerHour   int
	// Concurrency caps the calls in flight per corp. Zero means no cap.
	Concurrency int
	// PerResource caps the calls in flight per corp and resource: per
	// customer (userid, external_userid) for mark_tag, per app for gettoken.
	// Zero means no cap.
	PerResource int
	// BlockFor is how long the API is left alone after WeCom answers 45009.
	// WeCom blocks for the window that was exceeded: 60 s for the per-minute
	// limit, an hour for the per-hour one. Zero means one minute.
	BlockFor time.Duration
}

// DefaultLimits returns the documented limits of an API path: for every API,
// 10,000 calls a minute and 150,000 an hour per corp; for every contact-tag
// (/cgi-bin/tag/...) and customer-contact-tag API, at most 5 in flight per
// corp; for mark_tag, also one call at a time per customer; for gettoken, one
// fetch at a time per app.
func DefaultLimits(path string) Limits {
	l := Limits{PerMinute: defaultPerMinute, PerHour: defaultPerHour, BlockFor: defaultBlockFor}
	switch path {
	case pathTagCreate, pathTagUpdate, pathTagDelete, pathTagGet, pathTagAddUsers, pathTagDelUsers, pathTagList,
		pathCorpTagList, pathCorpTagAdd, pathCorpTagEdit, pathCorpTagDel:
		l.Concurrency = defaultTagConcurrent
	case pathMarkTag:
		l.Concurrency = defaultTagConcurrent
		l.PerResource = 1
	case pathGetToken:
		l.PerResource = 1
	}
	return l
}

func (l Limits) validate(path string) error {
	switch {
	case l.PerMinute < 0 || l.PerHour < 0:
		return invalid("limits "+path, "negative rate %d/min %d/h", l.PerMinute, l.PerHour)
	case l.Concurrency < 0 || l.PerResource < 0:
		return invalid("limits "+path, "negative concurrency %d or per-resource %d", l.Concurrency, l.PerResource)
	case l.BlockFor < 0:
		return invalid("limits "+path, "negative BlockFor %s", l.BlockFor)
	}
	return nil
}

func (l Limits) blockFor() time.Duration {
	if l.BlockFor == 0 {
		return defaultBlockFor
	}
	return l.BlockFor
}

func (l Limits) windows() []throttle.Window {
	var w []throttle.Window
	if l.PerMinute > 0 {
		w = append(w, throttle.Window{Limit: l.PerMinute, Period: time.Minute})
	}
	if l.PerHour > 0 {
		w = append(w, throttle.Window{Limit: l.PerHour, Period: time.Hour})
	}
	return w
}

// limits returns the limits in force for path.
func (c *Client) limits(path string) Limits {
	if l, ok := c.overrides[path]; ok {
		return l
	}
	return DefaultLimits(path)
}

// apiKey is the limiter key of (corp, path). The corp id in braces is a Redis
// Cluster hash tag: one corp's keys share a slot, different corps spread.
func (c *Client) apiKey(path string) string { return "{" + c.corpID + "}" + path }

// requests returns the leases a call takes, in the order it takes them: the
// scarcer per-resource slot first, so that no API slot is held while waiting
// for a busy customer.
func (c *Client) requests(cl *call, l Limits) []throttle.Request {
	var rs []throttle.Request
	if cl.resource != "" && l.PerResource > 0 {
		rs = append(rs, throttle.Request{
			Key:         c.apiKey(cl.path) + "|" + cl.resource,
			Concurrency: l.PerResource,
			TTL:         c.leaseTTL(),
		})
	}
	return append(rs, throttle.Request{
		Key:          c.apiKey(cl.path),
		Concurrency:  l.Concurrency,
		TTL:          c.leaseTTL(),
		Windows:      l.windows(),
		WaitCooldown: c.waitOnRateLimit,
	})
}

// DefaultLeaseTTL is how long a concurrency slot outlives a process that died
// holding it. Live calls renew their slots, however long they take.
const DefaultLeaseTTL = 15 * time.Second

func (c *Client) leaseTTL() time.Duration { return c.leaseTTLOpt }

// fetchTimeout bounds a token fetch, its retries included.
func (c *Client) fetchTimeout() time.Duration { return 2*c.attemptTimeout + 15*time.Second }
