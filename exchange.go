// The exchange of an attempt that holds its limits: its credential
// attached, sent and answered, or not sent at all, and in both cases
// settled and observed. A request sent is in flight at WeCom until WeCom
// answers, whatever the caller does: when the caller can give up, the
// exchange runs in a goroutine of its own that outlives it.

package wecom

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"time"
)

// tried is what an attempt hands the loop.
type tried struct {
	err error
	// tok is the credential's value the attempt sent.
	tok string
	// final: the error ends the call (no credential could be had, the
	// fetch having made its own retries; a duplicate check run out).
	final bool
	// retake: no attempt was made; the limits are to be taken again after
	// wait, and changes reported with the attempt that starts.
	retake  bool
	wait    time.Duration
	changes []LimitChange
}

// attemptResult is what an attempt run in the background hands its caller.
type attemptResult struct {
	a        Attempt
	panicked any // re-panicked in the caller
}

// exchange sends the call, which holds h (renewed until settled), unless
// failed says why it cannot be sent (its limits), or it cannot be sent now:
// its credential cannot be had (a token replaced while the call waited
// for a slot is not sent), the caller left, or WeCom's duplicate check no
// longer covers a repeat. It waits for the answer; when ctx ends first, it
// returns ctx's error at once and the attempt goes on in the background
// under the client's attempt timeout, its leases going back when the
// answer arrives (see Client.Drain). A panic in the background reaches the
// caller, or is logged when the caller has gone.
func (p *pipeline) exchange(ctx context.Context, cl *call, el *endpointLimits, h held, a Attempt, failed error) tried {
	res := tried{err: failed}
	if res.err == nil && cl.counted && !time.Now().Before(cl.dedupeUntil) {
		// The wait outlasted WeCom's duplicate check: a copy sent now
		// would be delivered again.
		res.err, res.final = fmt.Errorf("wecom: %s: not repeated: WeCom's duplicate check no longer covers it (%w)", cl.path, ErrMaybeDone), true
	}
	if res.err == nil && cl.cred != nil {
		res.tok, res.err = credentialValue(ctx, cl.cred)
		res.final = res.err != nil
	}
	if res.err == nil && ctx.Err() != nil { // the caller left before anything was sent
		res.err = fmt.Errorf("wecom: %s: %w", cl.path, ctx.Err())
	}
	if res.err == nil && p.era() != h.era {
		// The limiter may have lost its state since the call asked for its
		// first lease (Redis restarted empty while it waited for a later
		// one or for its credential, or while it was held up): a slot it
		// holds may be another call's now. Each is renewed, or the call
		// starts over.
		lost, err := p.renew(ctx, h.leases)
		if err != nil {
			res.err = p.limitError(cl.path, 0, err)
		} else if lost {
			p.settle(ctx, cl, el, h, delivery{}, a)
			return tried{retake: true, changes: a.LimitChanges}
		}
	}
	r, gone := p.awaitAnswer(ctx, cl, el, h, res.tok, res.err, a)
	var cp *credentialPanic
	if errors.As(res.err, &cp) { // the leases went back: nothing was sent
		panic(cp.value)
	}
	if gone != nil {
		res.err = gone
		return res
	}
	if r.panicked != nil {
		panic(r.panicked)
	}
	p.observe(ctx, r.a, nil)
	res.err = r.a.Err
	return res
}

// credentialPanic carries a panic of a credential's fetch (an observer's
// or a log handler's, handed to every caller who waited for the value) to
// where the attempt's leases are given back, and then on to the caller.
type credentialPanic struct{ value any }

func (e *credentialPanic) Error() string {
	return fmt.Sprintf("wecom: the credential's fetch panicked: %v", e.value)
}

// credentialValue returns the value of credential c, a panic of its fetch
// as a *credentialPanic.
func credentialValue(ctx context.Context, c carried) (tok string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &credentialPanic{v}
		}
	}()
	return c.token(ctx)
}

// awaitAnswer runs the round trip of an attempt and returns its result: in
// this goroutine when there is nothing to send or the caller cannot give
// up, else in a goroutine of its own (detach). gone is the error of a
// caller that gave up first.
func (p *pipeline) awaitAnswer(ctx context.Context, cl *call, el *endpointLimits, h held, tok string, failed error, a Attempt) (r attemptResult, gone error) {
	if failed != nil || ctx.Done() == nil {
		return p.safeRoundTrip(ctx, cl, el, h, tok, failed, a), nil
	}
	return p.detach(ctx, cl, el, h, tok, a)
}

// detach runs the round trip in a goroutine that outlives a caller who
// gives up: its answer is decoded into a value of the attempt's own,
// handed to the caller's out only when the caller takes the answer (a
// caller that left never sees its out written behind its back), and an
// attempt whose caller has gone tells the observer itself.
func (p *pipeline) detach(ctx context.Context, cl *call, el *endpointLimits, h held, tok string, a Attempt) (attemptResult, error) {
	bg, private := cl.detached()
	answered := make(chan attemptResult)
	p.background.add()
	go func() {
		defer p.background.done()
		r := p.safeRoundTrip(ctx, bg, el, h, tok, nil, a)
		select {
		case answered <- r:
		case <-ctx.Done():
			r.a.Detached = true
			p.observe(ctx, r.a, r.panicked)
		}
	}()
	select {
	case r := <-answered:
		if private.IsValid() && r.panicked == nil {
			reflect.ValueOf(cl.out).Elem().Set(private.Elem())
		}
		return r, nil
	case <-ctx.Done():
		cl.leave()
		return attemptResult{}, fmt.Errorf("wecom: %s: gave up waiting for the answer (the call goes on without its caller, and may be done): %w (%w)", cl.path, ctx.Err(), ErrMaybeDone)
	}
}

// safeRoundTrip is roundTrip with its panic caught, for the caller to
// re-panic in its own goroutine.
func (p *pipeline) safeRoundTrip(ctx context.Context, cl *call, el *endpointLimits, h held, tok string, failed error, a Attempt) (r attemptResult) {
	defer func() { r.panicked = recover() }()
	r.a = p.roundTrip(ctx, cl, el, h, tok, failed, a)
	return r
}

// roundTrip sends the call with the credential's value tok attached,
// unless failed says why not, and then settles its leases (settle). A
// panic while the request may have left (the transport's, the caller's
// reader or writer) settles them as for no answer, and then goes on.
func (p *pipeline) roundTrip(ctx context.Context, cl *call, el *endpointLimits, h held, tok string, failed error, a Attempt) Attempt {
	a.Err = failed
	var d delivery // not sent
	var panicked any
	if failed == nil {
		start := time.Now()
		d, panicked, a.Err = p.send(ctx, outgoing{cl: cl, query: withCredential(cl, tok)})
		a.Duration = time.Since(start)
	}
	a = p.settle(ctx, cl, el, h, d, a)
	if panicked != nil {
		panic(panicked)
	}
	return a
}

// withCredential returns the query of cl with the credential's value
// tok attached.
func withCredential(cl *call, tok string) url.Values {
	q := maps.Clone(cl.query)
	if cl.cred != nil {
		if q == nil {
			q = make(url.Values, 1)
		}
		q.Set(cl.cred.carriedIn(), tok)
	}
	return q
}
