package callback

import (
	"log/slog"
	"time"
)

// The Handler's defaults, set by NewHandler unless an option says otherwise.
const (
	// DefaultMaxBodySize bounds a POST body: 1 MiB. WeCom's callbacks are
	// a few kilobytes; a larger body is answered 413 unread.
	DefaultMaxBodySize = 1 << 20
	// DefaultTimestampWindow is how far a request's timestamp may be from
	// this server's clock, either way: 5 minutes. WeCom signs each attempt
	// when it sends it, so an honest request is seconds old; the window
	// allows for clock drift and bounds how long a captured request can be
	// replayed.
	DefaultTimestampWindow = 5 * time.Minute
	// DefaultTimeout is the deadline of a handler called in line: 4
	// seconds, leaving a second of WeCom's 5 for the network and the
	// answer.
	DefaultTimeout = 4 * time.Second
	// DefaultQueuedTimeout is the deadline of a handler called from the
	// queue (WithQueue), where WeCom's 5 seconds no longer bind: 1 minute.
	DefaultQueuedTimeout = time.Minute
	// DefaultCommandTimeout is the deadline of a suite's command callback
	// (InfoType suite_ticket, create_auth, change_auth, cancel_auth,
	// change_contact, …, the kinds "info/…"), called in line: 800
	// milliseconds, for WeCom wants the "success" of those within 1000
	// (its rule for a suite's command URL), and the rest of that second is
	// the network's.
	DefaultCommandTimeout = 800 * time.Millisecond
	// DefaultMaxOverruns bounds the handlers called in line that may still
	// run past their deadline (acknowledged, their goroutines going on):
	// 32. Beyond it a callback is refused (503) until some return.
	DefaultMaxOverruns = 32
)

// config is what the options set.
type config struct {
	logger         *slog.Logger
	maxBody        int64
	window         time.Duration
	timeout        time.Duration
	commandTimeout time.Duration
	maxOverruns    int
	dedupe         Deduper
	ttl            time.Duration
	namespace      string
	urlCheck       *string           // nil: the Crypto's receive id
	postIDs        map[string]bool   // more receive ids a POST may carry
	postFunc       func(string) bool // or a function accepting them
	queueSize      int
	workers        int
}

// Option configures a Handler. Options that cannot use their value make
// NewHandler return an *Error matching ErrConfig.
type Option func(*config) error

// WithLogger sets the logger (default: discard). The Handler logs every
// rejected request (status, reason, remote address), refusals, handler
// errors and overruns; never a token, key, signature, ciphertext or
// decrypted message.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fail(ErrConfig, "nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithMaxBodySize bounds a POST body in bytes (default
// DefaultMaxBodySize); a larger one is answered 413.
func WithMaxBodySize(n int64) Option {
	return func(c *config) error {
		if n < 1 {
			return fail(ErrConfig, "max body size < 1")
		}
		c.maxBody = n
		return nil
	}
}

// WithTimestampWindow sets how far a request's timestamp may be from now,
// either way (default DefaultTimestampWindow); a request outside is
// answered 400 before anything is decrypted. 0 turns the check off (the
// timestamp must still be a number).
func WithTimestampWindow(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fail(ErrConfig, "negative timestamp window")
		}
		c.window = d
		return nil
	}
}

// WithTimeout sets the deadline of the context a handler gets (default
// DefaultTimeout, or DefaultQueuedTimeout with WithQueue), counted from the
// request's arrival in line, so that it covers reading the body and the
// Deduper: Seen may take a quarter of it (a late one is passed over and the
// callback delivered), and a failed handler's Forget runs before the 500,
// at most half a second past the deadline. Called in line,
// a handler still running at its deadline does not hold the answer: the
// callback is acknowledged (so WeCom does not retry it while it runs) and
// the overrun is logged and counted in Stats (WithMaxOverruns bounds how
// many may run at once); if it then fails, the callback is lost (WeCom
// does not send it again) and counted in Stats.Lost.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fail(ErrConfig, "timeout <= 0")
		}
		c.timeout = d
		return nil
	}
}

// WithMaxOverruns bounds the handlers called in line still running past
// their deadline (default DefaultMaxOverruns). Each was acknowledged and
// goes on in its goroutine, which nothing can stop (its context is done);
// while n of them run, a new callback is refused with 503 (WeCom tries it
// again later), logged and counted in Stats.Refused, rather than pile up
// goroutines. Close waits for them.
func WithMaxOverruns(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fail(ErrConfig, "max overruns < 1")
		}
		c.maxOverruns = n
		return nil
	}
}

// WithCommandTimeout sets the deadline of a suite's command callback (a
// kind "info/…": suite_ticket, create_auth, change_auth, cancel_auth, …)
// called in line (default DefaultCommandTimeout): WeCom wants their answer
// within 1000 milliseconds. It bounds them along with WithTimeout (the
// shorter applies), from the request's arrival, the deduper included; a
// handler still running at it is acknowledged ("success") and goes on, as
// under WithTimeout. With WithQueue it bounds the deduper only: the answer
// does not wait for the handler.
func WithCommandTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fail(ErrConfig, "command timeout <= 0")
		}
		c.commandTimeout = d
		return nil
	}
}

// WithDeduper sets where delivered callbacks are remembered, and for how
// long (ttl <= 0: DefaultDedupeTTL). NewHandler refuses (ErrConfig) a ttl
// under twice the timestamp window (WithTimestampWindow) plus RetrySpan:
// a request replayed within the window after its key expired would be
// delivered again. The default is a MemoryDeduper of
// DefaultDedupeCapacity keys; replicas behind a load balancer need one
// they share, such as redisdedupe.Deduper.
func WithDeduper(d Deduper, ttl time.Duration) Option {
	return func(c *config) error {
		if d == nil {
			return fail(ErrConfig, "nil deduper")
		}
		if ttl <= 0 {
			ttl = DefaultDedupeTTL
		}
		c.dedupe, c.ttl = d, ttl
		return nil
	}
}

// WithURLCheckReceiveID sets the receive id WeCom's URL check (the GET)
// must carry, when it is not the Crypto's: a suite's command URL is
// checked with the provider's corp id while its POSTs carry the suite id,
// and a third-party app's data callback URL is checked with the provider's
// corp id while its POSTs carry each authorizing corp's id. An empty id
// accepts any receive id in the URL check.
//
// Which receive id goes where:
//
//	receiver                      URL check (GET)     callbacks (POST)
//	a corp's own app              corp id             corp id
//	a suite's command URL         provider corp id    suite id
//	a third-party data callback   provider corp id    authorizing corp ids
//	an app of a personal subject  (none: empty)       (none: empty)
func WithURLCheckReceiveID(id string) Option {
	return func(c *config) error {
		c.urlCheck = &id
		return nil
	}
}

// WithReceiveIDs lets a POST carry any of ids as its receive id, besides
// the Crypto's own (a third-party app's data callback URL receives the
// callbacks of every authorizing corp, each with that corp's id). An
// empty id is an error; with WithReceiveIDFunc, a receive id either
// accepts is taken.
func WithReceiveIDs(ids ...string) Option {
	return func(c *config) error {
		if c.postIDs == nil {
			c.postIDs = make(map[string]bool, len(ids))
		}
		for _, id := range ids {
			if id == "" {
				return fail(ErrConfig, "empty receive id")
			}
			c.postIDs[id] = true
		}
		return nil
	}
}

// WithReceiveIDFunc lets a POST carry any receive id accept reports true
// for, besides the Crypto's own: for a third-party app's data callback
// URL, whose authorizing corps change as they install and remove the app.
// accept is called concurrently and must be quick.
func WithReceiveIDFunc(accept func(receiveID string) bool) Option {
	return func(c *config) error {
		if accept == nil {
			return fail(ErrConfig, "nil receive id func")
		}
		c.postFunc = accept
		return nil
	}
}

// WithDedupeNamespace sets the prefix of this Handler's keys in its
// Deduper. By default it is a short hash of the Crypto's receive id, token
// and EncodingAESKey (never those themselves), so that Handlers sharing a
// Deduper (two apps of one corp receive the same change_contact event)
// do not take each other's callbacks for duplicates, while the replicas of
// one receiver, configured alike, share their keys. Set it to keep keys
// stable across a change of token or key, or to name them; Handlers that
// share a Deduper need distinct namespaces. An empty ns is an error.
func WithDedupeNamespace(ns string) Option {
	return func(c *config) error {
		if ns == "" {
			return fail(ErrConfig, "empty dedupe namespace")
		}
		c.namespace = ns
		return nil
	}
}

// WithQueue acknowledges each callback as soon as it is verified, parsed
// and new, and hands it to one of workers goroutines through a queue of
// size callbacks. When the queue is full the callback is refused (503, so
// WeCom retries it later), logged and counted in Stats.Refused: the queue
// never grows. A handler's reply cannot be sent this way and is dropped
// (logged). Close stops the workers.
func WithQueue(size, workers int) Option {
	return func(c *config) error {
		if size < 1 || workers < 1 {
			return fail(ErrConfig, "queue size and workers must be at least 1")
		}
		c.queueSize, c.workers = size, workers
		return nil
	}
}
