// The call pipeline: one call as the pipeline sees it, Do for the APIs
// the SDK does not wrap, the retry loop, and one attempt with its leases.

package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

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
	// uncounted names the recipients no limit counts (catalog.Keys).
	uncounted []string
	// tryMembers: a call's per-member windows are taken if they have room
	// now, never waited for (a message sent only to the members ready).
	tryMembers bool
	// counted: an attempt may have been done (ErrMaybeDone), so what it
	// counted per member and in units stands: a retry takes only the
	// other limits, and goes out only while the duplicate check covers it.
	counted bool
	// chatMembers are the members of the app group chat the call sends
	// to, which its request does not name (catalog.Keys.Chat): the typed
	// method knows them (AppChats.Send); nil for Do, which cannot.
	chatMembers []string
	// dedupe: WeCom drops a copy of the call sent within this long of the
	// first (a message's duplicate check), so that it may be repeated
	// until dedupeUntil, which do sets, though its endpoint is not
	// repeatable.
	dedupe      time.Duration
	dedupeUntil time.Time
	// upload, download: the file a call sends as multipart, or receives
	// (codec.go); nil for JSON.
	upload   *upload
	download *download
	// Set by prepare, from the catalog for a typed call: cred is the
	// credential the call carries (nil: none, gettoken's own calls).
	idempotent   bool
	cred         *credential
	omitsErrcode bool
}

// leave stops the attempt going on in the background from reading or
// writing the file of a caller who gave up: the call returns to it.
func (cl *call) leave() {
	if cl.upload != nil {
		cl.upload.g.leave()
	}
	if cl.download != nil {
		cl.download.g.leave()
	}
}

// prepare completes a call from the client's table and returns its limits.
// A typed method naming an endpoint the catalog does not declare is a bug
// of the SDK; it fails here, and the shared endpoint tests catch it.
func (c *Client) prepare(cl *call) (*endpointLimits, error) {
	var el *endpointLimits
	if cl.id == "" {
		el = c.limitsFor(cl.path)
		cl.idempotent = cl.method == http.MethodGet
		if el.ep.Method != "" { // a wrapped endpoint: the catalog knows
			cl.idempotent = el.ep.Repeatable
		}
		cl.omitsErrcode = el.ep.OmitsErrcode || omitsErrcode(cl.path)
	} else {
		var ok bool
		if el, ok = c.endpoints[string(cl.id)]; !ok || el.ep.Method == "" {
			return nil, fmt.Errorf("wecom: %s is not in the catalog", cl.id)
		}
		cl.path, cl.method = string(cl.id), el.ep.Method
		cl.idempotent = el.ep.Repeatable
		cl.omitsErrcode = el.ep.OmitsErrcode
	}
	var err error
	if cl.cred, err = c.credentialOf(el.ep); err != nil {
		return nil, err
	}
	return el, c.readKeys(cl, el)
}

// credentialOf returns the credential calls of e carry, by the catalog's
// token kind (the corp's access token for a path the catalog does not
// declare), or nil for none. A kind the client was not given fails: never
// the corp's access_token in its place.
func (c *Client) credentialOf(e catalog.Endpoint) (*credential, error) {
	switch {
	case e.Method == "" || e.Token == catalog.CorpToken:
		return c.tokens, nil
	case e.Token == catalog.NoToken:
		return nil, nil
	case e.Token == catalog.SuiteToken && c.suite != nil:
		return c.suite, nil
	case e.Token == catalog.ProviderToken && c.provider != nil:
		return c.provider, nil
	case e.Token == catalog.RobotKey && c.robot != nil:
		return c.robot, nil
	}
	return nil, invalid("credential", "%s carries a %s, which the client was not given (WithSuite, WithProvider, NewRobot)", e.ID, e.Token)
}

// readKeys reads what cl's rules count per resource, per member or in
// units from its request, with its endpoint's Keys, the function the mock
// reads them with too. The body is encoded once, here, and sent as is. A
// call whose rules need what it does not say is refused: nothing is sent.
func (c *Client) readKeys(cl *call, el *endpointLimits) error {
	if !slices.ContainsFunc(el.rules, catalog.Rule.NeedsKeys) {
		return nil
	}
	if el.ep.Keys != nil {
		body, err := encoded(cl.body)
		if err != nil {
			return invalid("body", "%s: %v", cl.path, err)
		}
		if body != nil {
			cl.body = body
		}
		k, err := el.ep.Keys(keysQuery(cl, el.ep), body)
		if err != nil {
			return &ValidationError{Field: "request", Reason: fmt.Sprintf("%s: %v", cl.path, err), Err: err}
		}
		if k.Chat != "" {
			if cl.chatMembers == nil {
				return invalid("request", "%s names only its chat %q, and its limits count the chat's members, which only AppChats.Send knows (it reads them with appchat/get): send it with that", cl.path, k.Chat)
			}
			k.Members, k.Weight = cl.chatMembers, len(cl.chatMembers)
		}
		cl.resource, cl.members, cl.weight, cl.uncounted = k.Resource, k.Members, k.Weight, k.Uncounted
	}
	return counted(cl, el.rules)
}

// keysQuery is the query a call's Keys read: its own, with the robot's key
// for an endpoint whose limits count per robot (the key is what names the
// robot), as the server sees the query.
func keysQuery(cl *call, e catalog.Endpoint) url.Values {
	if e.Token != catalog.RobotKey || cl.cred == nil || cl.cred.fixed == "" {
		return cl.query
	}
	q := maps.Clone(cl.query)
	if q == nil {
		q = url.Values{}
	}
	q.Set(cl.cred.param, cl.cred.fixed)
	return q
}

// encoded returns body as it goes on the wire: as it is when it is already
// bytes (a []byte, json.RawMessage or string, which resty sends as is),
// else encoded as JSON; nil for no body.
func encoded(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case []byte:
		return b, nil
	case json.RawMessage:
		return b, nil
	case string:
		return []byte(b), nil
	}
	return json.Marshal(body)
}

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
	el, wrapped := c.endpoints[path]
	wrapped = wrapped && el.ep.Method != ""
	if wrapped && el.ep.Method != method {
		return invalid("method", "%s takes %s, not %s", path, el.ep.Method, method)
	}
	if !wrapped {
		if near := c.nearWrapped(path); near != "" {
			return invalid("path", "%q is not an endpoint the SDK wraps, and would escape its limits: did you mean %q?", path, near)
		}
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
	bo := c.retry.newBackOff()
	var st retryState
	if cl.dedupe > 0 { // a margin for the clocks of WeCom's servers and the time the first send takes
		cl.dedupeUntil = time.Now().Add(cl.dedupe - cl.dedupe/10)
	}
	for n := 1; ; n++ {
		tok, final, err := c.attempt(ctx, cl, el, n)
		if err == nil {
			return nil
		}
		if !cl.idempotent && errors.Is(err, ErrMaybeDone) {
			// WeCom may have done it: its counts per member and in units
			// stand, and a retry (under the duplicate check, which drops
			// the copy) takes them no more. A repeatable call's retry is
			// a call of its own, counted as one.
			cl.counted = true
		} else if cl.counted {
			err = fmt.Errorf("%w (an earlier attempt may have been done: %w)", err, ErrMaybeDone)
		}
		if final || ctx.Err() != nil {
			return err
		}
		deadline, _ := ctx.Deadline()
		var act retryAction
		act, st = c.decide(err, cl, st, time.Now(), deadline)
		code := errcodeOf(err)
		switch act {
		case retryStop:
			if !cl.idempotent && retryable(err) && errors.Is(err, ErrMaybeDone) {
				return fmt.Errorf("%w (not repeated: it is not safe to repeat)", err)
			}
			return err
		case retryNewCredential:
			c.logger.LogAttrs(ctx, slog.LevelInfo, "wecom: "+cl.cred.name+" rejected, fetching a new one", slog.String("path", cl.path), slog.Int("errcode", code))
			cl.cred.invalidate(ctx, tok)
			continue
		case retryAfterCooldown:
			continue // the next lease waits out the cooldown
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

// attempt sends the call once. It takes the call's leases, then the token:
// a token replaced while the call waited for a slot is not sent. It returns
// the token it sent. A call whose caller gives up after sending goes on in
// the background (see exchange). final reports an error that ends the call:
// no token could be had, the fetch having made its own retries.
func (c *Client) attempt(ctx context.Context, cl *call, el *endpointLimits, n int) (tok string, final bool, err error) {
	waitStart := time.Now()
	leases, slot, changes, err := c.acquire(ctx, cl, el)
	a := Attempt{Method: cl.method, Path: cl.path, Number: n, LeaseWait: time.Since(waitStart), LimitChanges: changes, Uncounted: cl.uncounted}
	if err == nil && cl.counted && !time.Now().Before(cl.dedupeUntil) {
		// The wait outlasted WeCom's duplicate check: a copy sent now
		// would be delivered again.
		c.release(ctx, leases)
		err, final = fmt.Errorf("wecom: %s: not repeated: WeCom's duplicate check no longer covers it (%w)", cl.path, ErrMaybeDone), true
	}
	if err != nil {
		a.Err = err
		c.observe(ctx, a)
		return "", final, err
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
	if cl.cred != nil {
		if tok, err = cl.cred.token(ctx); err != nil {
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
	return tok, false, c.exchange(ctx, cl, el, sent{leases, slot, stop, tok}, a)
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
func (c *Client) exchange(ctx context.Context, cl *call, el *endpointLimits, s sent, a Attempt) error {
	if ctx.Done() == nil { // the caller cannot give up: no goroutine needed
		a = c.roundTrip(ctx, cl, el, s, a)
		c.observe(ctx, a)
		return a.Err
	}
	// The answer is decoded into a value of the attempt's own, handed to
	// the caller's only when the caller takes the answer: a caller that
	// left never sees its out written behind its back.
	bg, private := cl.detached()
	answered := make(chan attemptResult)
	c.background.add()
	go func() {
		defer c.background.done()
		var r attemptResult
		func() {
			defer func() { r.panicked = recover() }()
			r.a = c.roundTrip(ctx, bg, el, s, a)
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
		if private.IsValid() {
			reflect.ValueOf(cl.out).Elem().Set(private.Elem())
		}
		c.observe(ctx, r.a)
		return r.a.Err
	case <-ctx.Done():
		cl.leave()
		return fmt.Errorf("wecom: %s: gave up waiting for the answer (the call goes on without its caller, and may be done): %w (%w)", cl.path, ctx.Err(), ErrMaybeDone)
	}
}

// detached returns a copy of cl for an attempt that may outlive its
// caller, whose answer goes into private, a new value of the type cl.out
// points to (invalid when cl has no out).
func (cl *call) detached() (*call, reflect.Value) {
	if cl.out == nil {
		return cl, reflect.Value{}
	}
	t := reflect.TypeOf(cl.out)
	if t.Kind() != reflect.Pointer {
		return cl, reflect.Value{}
	}
	private := reflect.New(t.Elem())
	private.Elem().Set(reflect.ValueOf(cl.out).Elem()) // what the caller set in it, as a decode into it keeps
	bg := *cl
	bg.out = private.Interface()
	return &bg, private
}

// roundTrip makes the HTTP exchange of an attempt that holds leases, bounded
// by the attempt timeout and not by the caller's context, and then gives the
// leases back: at once if an answer came or the request never left, and
// otherwise (the request may be running at WeCom) only when their hold ends.
func (c *Client) roundTrip(ctx context.Context, cl *call, el *endpointLimits, s sent, a Attempt) Attempt {
	settled := false
	defer func() {
		if !settled { // a panic while the request may have left: hold, as for no answer
			s.stop()
			c.hold(ctx, cl.path, s.leases)
		}
	}()
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.attemptTimeout)
	if cl.upload != nil || cl.download != nil {
		// sendStream bounds the wait and every pause, not the transfer
		actx, cancel = context.WithCancel(context.WithoutCancel(ctx))
	}
	defer cancel()
	q := make(url.Values, len(cl.query)+1)
	for k, v := range cl.query {
		q[k] = v
	}
	if cl.cred != nil {
		q.Set(cl.cred.param, s.tok)
	}
	start := time.Now()
	unanswered, err := c.send(actx, cl, q)
	s.stop()
	a.Duration, a.Err = time.Since(start), err
	var ae *APIError
	if errors.As(err, &ae) {
		a.ErrCode = ae.Code
		if ae.Code == CodeConcurrencyLimited {
			if ch := c.refused(context.WithoutCancel(ctx), cl, s.slot); ch != nil {
				a.LimitChanges = append(a.LimitChanges, *ch)
			}
		}
		if ae.Code == CodeFrequencyLimited {
			// Before the leases go back: nobody starts on this API until the block ends.
			block := c.block(cl.path, el, c.now())
			if cerr := c.limiter.Cooldown(context.WithoutCancel(ctx), c.coolKey(cl, el), block); cerr != nil {
				c.logger.LogAttrs(ctx, slog.LevelError, "wecom: could not record cooldown", slog.String("path", cl.path), slog.String("error", cerr.Error()))
			}
			a.Err = &RateLimitError{Path: cl.path, RetryAfter: block, Err: ae}
		}
	}
	settled = true
	if unanswered {
		a.Abandoned = c.hold(ctx, cl.path, s.leases)
	} else {
		c.release(ctx, s.leases)
	}
	return a
}

// sent is what an attempt sends under: its leases (renewed until stop), the
// cap its API's slot was granted under, and its credential's value.
type sent struct {
	leases []throttle.Lease
	slot   apiSlot
	stop   func()
	tok    string
}
