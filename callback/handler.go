package callback

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Handler is the http.Handler of a callback URL. A GET is WeCom's URL check,
// answered with the decrypted echostr. A POST is verified, decrypted,
// parsed into an Event, deduplicated and handed to the function registered
// for its type (Handle, HandleReply), within a deadline that leaves WeCom's
// 5 seconds room (WithTimeout; a suite's command callback, which WeCom
// wants answered within 1 second, WithCommandTimeout), counted from the
// request's arrival; the answer is an empty 200 ("success" to a suite's
// command callbacks), or the encrypted passive reply a handler returned.
//
// Bad input is a 4xx and a log line, never a 500: a body over the size
// limit 413; a missing parameter, a malformed or stale timestamp, or a
// body that is not WeCom's XML 400; a bad signature or a wrong receive id
// 403. The timestamp and the signature are checked before anything is
// decrypted. A handler's error (or panic) is a 500, so that WeCom retries;
// a full queue (WithQueue), or too many handlers overrunning in line
// (WithMaxOverruns), a 503.
//
// Register handlers before serving; a Handler is safe for concurrent use.
type Handler struct {
	crypto *Crypto
	cfg    config
	log    *slog.Logger

	mu     sync.RWMutex
	routes map[reflect.Type]route

	q         *queue       // nil: handlers run in line
	bg        tracker      // workers, deduper calls and handlers that outlive their request
	overruns  atomic.Int64 // handlers in line still running past their deadline
	life      context.Context
	stop      context.CancelFunc // ends life: Close's ctx ended first
	redeliver redeliverSet
	stats     counters
	bodies    sync.Pool // *[]byte: request bodies, read and done with (open)
}

// route calls a user's function with an Event of its type.
type route func(ctx context.Context, ev Event) ([]byte, error)

// NewHandler returns the Handler of a callback URL whose messages c
// decrypts.
func NewHandler(c *Crypto, opts ...Option) (*Handler, error) {
	if c == nil {
		return nil, fail(ErrConfig, "nil Crypto")
	}
	cfg := config{
		logger:         slog.New(slog.DiscardHandler),
		maxBody:        DefaultMaxBodySize,
		window:         DefaultTimestampWindow,
		ttl:            DefaultDedupeTTL,
		commandTimeout: DefaultCommandTimeout,
		maxOverruns:    DefaultMaxOverruns,
	}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if need := 2*cfg.window + RetrySpan; cfg.ttl < need {
		return nil, fail(ErrConfig, "dedupe TTL "+cfg.ttl.String()+" is under twice the timestamp window plus WeCom's retry span ("+need.String()+"): a replay within the window would be delivered again")
	}
	if cfg.dedupe == nil {
		d, err := NewMemoryDeduper(DefaultDedupeCapacity)
		if err != nil {
			return nil, err
		}
		cfg.dedupe = d
	}
	if cfg.namespace == "" {
		cfg.namespace = c.namespace()
	}
	if cfg.timeout == 0 {
		cfg.timeout = DefaultTimeout
		if cfg.workers > 0 {
			cfg.timeout = DefaultQueuedTimeout
		}
	}
	h := &Handler{crypto: c, cfg: cfg, log: cfg.logger, routes: make(map[reflect.Type]route)}
	h.life, h.stop = context.WithCancel(context.Background())
	if cfg.workers > 0 {
		h.startQueue()
	}
	return h, nil
}

// Handle registers fn for the callbacks of type E, replacing any function
// registered for E; a nil fn removes it. E is one of this package's event
// types (*TextMessage, *ContactEvent, …); *RawEvent receives the kinds this
// package does not parse; Event itself receives every callback no function
// of its own type was registered for. A callback no function takes is
// acknowledged and dropped.
func Handle[E Event](h *Handler, fn func(ctx context.Context, e E) error) {
	if fn == nil {
		h.setRoute(reflect.TypeFor[E](), nil)
		return
	}
	HandleReply(h, func(ctx context.Context, e E) ([]byte, error) { return nil, fn(ctx, e) })
}

// HandleReply is Handle for a function that may answer with a passive
// reply: the plaintext reply XML (see TextReply), which the Handler
// encrypts; nil answers nothing.
func HandleReply[E Event](h *Handler, fn func(ctx context.Context, e E) ([]byte, error)) {
	var r route
	if fn != nil {
		r = func(ctx context.Context, ev Event) ([]byte, error) {
			e, ok := ev.(E)
			if !ok {
				return nil, fmt.Errorf("callback: %T routed to a handler of %T", ev, e)
			}
			return fn(ctx, e)
		}
	}
	h.setRoute(reflect.TypeFor[E](), r)
}

func (h *Handler) setRoute(t reflect.Type, r route) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r == nil {
		delete(h.routes, t)
		return
	}
	h.routes[t] = r
}

// routeOf returns the function for ev: that of its type, or that of Event.
func (h *Handler) routeOf(ev Event) route {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if r := h.routes[reflect.TypeOf(ev)]; r != nil {
		return r
	}
	return h.routes[reflect.TypeFor[Event]()]
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		h.serveVerify(w, r)
	case http.MethodPost:
		h.serveCallback(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		h.reject(w, r, http.StatusMethodNotAllowed, fail(ErrMalformed, "method "+r.Method))
	}
}

// params returns the signed query parameters, the timestamp checked.
func (h *Handler) params(r *http.Request) (sig, ts, nonce string, err error) {
	q := r.URL.Query()
	sig, ts, nonce = q.Get("msg_signature"), q.Get("timestamp"), q.Get("nonce")
	if sig == "" || ts == "" || nonce == "" {
		return "", "", "", fail(ErrMalformed, "missing msg_signature, timestamp or nonce")
	}
	sec, perr := strconv.ParseInt(ts, 10, 64)
	if perr != nil {
		return "", "", "", fail(ErrTimestamp, "timestamp is not a number of seconds")
	}
	if h.cfg.window > 0 {
		if off := time.Since(time.Unix(sec, 0)); off > h.cfg.window || off < -h.cfg.window {
			return "", "", "", fail(ErrTimestamp, "timestamp is "+off.Truncate(time.Second).String()+" from now, outside the window of "+h.cfg.window.String())
		}
	}
	return sig, ts, nonce, nil
}

// acceptURLCheck reports whether the URL check may carry receive id rid.
func (h *Handler) acceptURLCheck(rid []byte) bool {
	if id := h.cfg.urlCheck; id != nil {
		return *id == "" || string(rid) == *id
	}
	return h.crypto.accepts(rid)
}

// acceptPost reports whether a callback may carry receive id rid.
func (h *Handler) acceptPost(rid []byte) bool {
	return h.crypto.accepts(rid) || h.cfg.postIDs[string(rid)] || (h.cfg.postFunc != nil && h.cfg.postFunc(string(rid)))
}

// serveVerify answers WeCom's URL check.
func (h *Handler) serveVerify(w http.ResponseWriter, r *http.Request) {
	sig, ts, nonce, err := h.params(r)
	if err != nil {
		h.reject(w, r, statusOf(err), err)
		return
	}
	// Base64 has no spaces: a space is a '+' that was not percent-encoded.
	echo := strings.ReplaceAll(r.URL.Query().Get("echostr"), " ", "+")
	if echo == "" {
		h.reject(w, r, http.StatusBadRequest, fail(ErrMalformed, "missing echostr"))
		return
	}
	plain, err := h.crypto.decryptFor(sig, ts, nonce, []byte(echo), h.acceptURLCheck)
	if err != nil {
		h.reject(w, r, statusOf(err), err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(plain)
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "callback: URL verified", slog.String("remote", r.RemoteAddr))
}

// serveCallback receives a POST.
func (h *Handler) serveCallback(w http.ResponseWriter, r *http.Request) {
	ctx, start := r.Context(), time.Now()
	sig, ts, nonce, err := h.params(r)
	if err != nil {
		h.reject(w, r, statusOf(err), err)
		return
	}
	msg, err := h.open(w, r, sig, ts, nonce)
	if err != nil {
		h.reject(w, r, statusOf(err), err)
		return
	}
	ev, p, err := parse(msg)
	if err != nil {
		h.reject(w, r, statusOf(err), err)
		return
	}
	kind := p.kindOf()
	fn := h.routeOf(ev)
	if fn == nil {
		h.log.LogAttrs(ctx, slog.LevelDebug, "callback: no handler, dropped", slog.String("kind", kind))
		h.ack(w, p)
		return
	}
	key := dedupeKey(h.cfg.namespace, p, msg)
	budget := h.answerWithin(p.command())
	answerBy := start.Add(budget)
	seen, late := h.seen(ctx, key, kind, start.Add(budget/dedupeShare))
	if seen {
		h.stats.duplicates.Add(1)
		h.log.LogAttrs(ctx, slog.LevelDebug, "callback: duplicate, not delivered again", slog.String("kind", kind))
		h.ack(w, p)
		return
	}
	if h.q != nil {
		h.serveQueued(w, r, p, job{ctx: context.WithoutCancel(ctx), fn: fn, ev: ev, key: key, kind: kind, seenLate: late}, answerBy, budget)
		return
	}
	if n := h.overruns.Load(); n >= int64(h.cfg.maxOverruns) {
		h.refuse(w, r, job{key: key, kind: kind, seenLate: late}, answerBy, budget, "too many handlers overrunning in line", slog.Int64("overrunning", n))
		return
	}
	h.serveInline(w, r, p, job{ctx: ctx, fn: fn, ev: ev, key: key, kind: kind, seenLate: late}, answerBy, budget, ts, nonce)
}

// answerWithin is how long a callback of a kind may take to be answered,
// from its request's arrival: the handler's timeout in line; with a queue,
// where the answer does not wait for the handler, DefaultTimeout at most;
// a suite's command callback (info/…), the command timeout at most.
func (h *Handler) answerWithin(command bool) time.Duration {
	d := h.cfg.timeout
	if h.q != nil {
		d = min(d, DefaultTimeout)
	}
	if command {
		d = min(d, h.cfg.commandTimeout)
	}
	return d
}

// serveInline runs the handler within its deadline and answers.
func (h *Handler) serveInline(w http.ResponseWriter, r *http.Request, p *probe, j job, deadline time.Time, budget time.Duration, ts, nonce string) {
	ctx, cancel := context.WithDeadline(j.ctx, deadline)
	defer cancel()
	run := &inlineRun{done: make(chan outcome, 1)}
	h.bg.add()
	go func() {
		defer h.bg.done()
		reply, err := h.call(ctx, j)
		run.finish(h, ctx, j, budget, outcome{reply, err})
	}()
	var o outcome
	select {
	case o = <-run.done:
	case <-ctx.Done():
		overran := errors.Is(ctx.Err(), context.DeadlineExceeded)
		var ok bool
		if o, ok = run.abandon(h, overran); !ok {
			// Answer now: WeCom would retry after 5 s, and the retry would
			// run the handler again while this one still works. (If WeCom
			// hung up instead, the answer goes nowhere; the handler's
			// context is cancelled all the same.)
			if overran {
				h.log.LogAttrs(r.Context(), slog.LevelWarn, "callback: handler still running at its deadline, acknowledged", slog.String("kind", j.kind), slog.Duration("timeout", budget))
			} else {
				h.log.LogAttrs(r.Context(), slog.LevelWarn, "callback: request gone while its handler runs", slog.String("kind", j.kind))
			}
			h.ack(w, p)
			return
		}
	}
	if o.err != nil {
		// Forget before answering, so that WeCom's retry finds the key gone.
		h.failed(ctx, j, o.err, deadline.Add(marginOf(budget)))
		http.Error(w, "handler failed", http.StatusInternalServerError)
		return
	}
	h.stats.delivered.Add(1)
	if o.reply != nil {
		out, err := h.crypto.EncryptReply(o.reply, ts, nonce)
		if err == nil {
			w.Header().Set("Content-Type", "text/xml; charset=utf-8")
			_, _ = w.Write(out)
			return
		}
		h.log.LogAttrs(ctx, slog.LevelError, "callback: reply not encrypted, acknowledged without it", slog.String("kind", j.kind), slog.String("error", err.Error()))
	}
	h.ack(w, p)
}

// outcome is what a handler returned.
type outcome struct {
	reply []byte
	err   error
}

// inlineRun is a handler called in line: it hands its outcome to the
// request, or, once the request has answered without it (abandon), deals
// with the outcome itself.
type inlineRun struct {
	mu        sync.Mutex
	abandoned bool
	overran   bool // abandoned at its deadline (not because the request went)
	done      chan outcome
}

// abandon marks the run abandoned, unless its outcome is already there;
// an overrun is counted until finish.
func (r *inlineRun) abandon(h *Handler, overran bool) (outcome, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case o := <-r.done: // finished just in time
		return o, true
	default:
		r.abandoned, r.overran = true, overran
		if overran {
			h.stats.overran.Add(1)
			h.overruns.Add(1)
		}
		return outcome{}, false
	}
}

// finish hands the outcome to the request, or, if the request answered
// without it, counts it: a failure after the acknowledgement of an
// overrun is lost (WeCom will not retry); one whose request went away is
// forgotten, so that WeCom's retry is delivered.
func (r *inlineRun) finish(h *Handler, ctx context.Context, j job, budget time.Duration, o outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.abandoned {
		r.done <- o
		return
	}
	if r.overran {
		defer h.overruns.Add(-1)
	}
	switch {
	case o.err == nil:
		h.stats.delivered.Add(1)
	case r.overran:
		h.lost(ctx, j, o.err)
	default:
		h.failed(ctx, j, o.err, time.Now().Add(budget/dedupeShare))
	}
}

// lost counts and logs a handler's failure after its callback was
// acknowledged: WeCom will not send it again.
func (h *Handler) lost(ctx context.Context, j job, err error) {
	h.stats.failed.Add(1)
	h.stats.lost.Add(1)
	h.log.LogAttrs(ctx, slog.LevelError, "callback: handler failed after the acknowledgement, callback lost (WeCom will not retry it)", slog.String("kind", j.kind), slog.String("error", err.Error()))
}

// call runs a handler, turning a panic into an error.
func (h *Handler) call(ctx context.Context, j job) (reply []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("callback: handler panicked: %v", v)
		}
	}()
	return j.fn(ctx, j.ev)
}

// failed logs and counts a handler's failure and forgets the callback by
// the time given, so that WeCom's retry (if any) is delivered.
func (h *Handler) failed(ctx context.Context, j job, err error, by time.Time) {
	h.stats.failed.Add(1)
	h.log.LogAttrs(ctx, slog.LevelError, "callback: handler failed", slog.String("kind", j.kind), slog.String("error", err.Error()))
	h.forget(ctx, j.key, j.seenLate, by)
}

// ack answers a callback handled (or to be): "success" to a suite's
// command callback, which must get that literal (document 97172), an empty
// 200 to an app's.
func (h *Handler) ack(w http.ResponseWriter, p *probe) {
	if p.command() {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "success")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// reject answers a request this Handler will not take, and logs why.
func (h *Handler) reject(w http.ResponseWriter, r *http.Request, status int, err error) {
	h.stats.rejected.Add(1)
	h.log.LogAttrs(r.Context(), slog.LevelWarn, "callback: request rejected",
		slog.Int("status", status), slog.String("reason", err.Error()),
		slog.String("method", r.Method), slog.String("remote", r.RemoteAddr))
	http.Error(w, http.StatusText(status), status)
}

// statusOf maps a failure to its HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrSignature), errors.Is(err, ErrReceiveID):
		return http.StatusForbidden
	default:
		return http.StatusBadRequest
	}
}

// Stats counts what a Handler did with the callbacks it received.
type Stats struct {
	Delivered  uint64 // handlers that returned without error
	Duplicates uint64 // retries recognized and not delivered again
	Rejected   uint64 // requests answered 4xx
	Refused    uint64 // callbacks refused (503): the queue full or closed, or too many overruns in line
	Failed     uint64 // handlers that returned an error or panicked
	Overran    uint64 // handlers still running at their deadline, acknowledged anyway
	// Lost counts the callbacks acknowledged and not delivered, which
	// WeCom does not send again: the handlers that failed after the
	// acknowledgement (an overrun in line, a queued one, one cancelled by
	// Close; these are also counted in Failed), and the queued callbacks
	// Close dropped unstarted.
	Lost uint64
}

type counters struct {
	delivered, duplicates, rejected, refused, failed, overran, lost atomic.Uint64
}

// Stats returns the counts so far.
func (h *Handler) Stats() Stats {
	s := &h.stats
	return Stats{
		Delivered: s.delivered.Load(), Duplicates: s.duplicates.Load(), Rejected: s.rejected.Load(),
		Refused: s.refused.Load(), Failed: s.failed.Load(), Overran: s.overran.Load(), Lost: s.lost.Load(),
	}
}
