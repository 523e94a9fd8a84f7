// The exchange of an attempt that holds its limits: sent and answered, or
// not sent at all, and in both cases settled and observed. A request sent
// is in flight at WeCom until WeCom answers, whatever the caller does: when
// the caller can give up, the exchange runs in a goroutine of its own that
// outlives it.

package wecom

import (
	"context"
	"fmt"
	"reflect"
	"time"
)

// attemptResult is what an attempt run in the background hands its caller.
type attemptResult struct {
	a        Attempt
	panicked any // re-panicked in the caller
}

// exchange sends the call, which holds the leases t took (renewed until
// settled), with tok, the credential's value, unless failed says why it
// cannot be sent (the limits, the credential, the caller gone), and waits
// for its answer. When ctx ends
// first, exchange returns ctx's error at once and the attempt goes on in
// the background under the client's attempt timeout, its leases going back
// when the answer arrives (see Client.Drain). A panic in the background
// reaches the caller, or is logged when the caller has gone.
func (p *pipeline) exchange(ctx context.Context, cl *call, el *endpointLimits, t taken, tok string, failed error, a Attempt) error {
	detach := failed == nil && ctx.Done() != nil // a caller who can give up, of a call to send
	c, private := cl, reflect.Value{}
	if detach {
		// The answer is decoded into a value of the attempt's own, handed
		// to the caller's only when the caller takes the answer: a caller
		// that left never sees its out written behind its back.
		c, private = cl.detached()
	}
	run := func() (r attemptResult) {
		defer func() { r.panicked = recover() }()
		r.a = p.roundTrip(ctx, c, el, t, tok, failed, a)
		return r
	}
	var r attemptResult
	if !detach {
		r = run()
	} else {
		answered := make(chan attemptResult)
		p.background.add()
		go func() {
			defer p.background.done()
			r := run()
			select {
			case answered <- r:
			case <-ctx.Done():
				r.a.Detached = true
				p.observe(ctx, r.a, r.panicked)
			}
		}()
		select {
		case r = <-answered:
		case <-ctx.Done():
			cl.leave()
			return fmt.Errorf("wecom: %s: gave up waiting for the answer (the call goes on without its caller, and may be done): %w (%w)", cl.path, ctx.Err(), ErrMaybeDone)
		}
	}
	if r.panicked != nil {
		panic(r.panicked)
	}
	if private.IsValid() {
		reflect.ValueOf(cl.out).Elem().Set(private.Elem())
	}
	p.observe(ctx, r.a, nil)
	return r.a.Err
}

// roundTrip makes the HTTP exchange of an attempt that holds leases,
// unless failed says why not, and then settles them (settle). A panic while
// the request may have left (the transport's, the caller's reader or
// writer) settles them as for no answer, and then goes on.
func (p *pipeline) roundTrip(ctx context.Context, cl *call, el *endpointLimits, t taken, tok string, failed error, a Attempt) Attempt {
	a.Err = failed
	unanswered := false
	var panicked any
	if failed == nil {
		start := time.Now()
		unanswered, panicked, a.Err = p.send(ctx, cl, tok)
		a.Duration = time.Since(start)
	}
	a = p.settle(ctx, cl, el, t, failed == nil, unanswered || panicked != nil, a)
	if panicked != nil {
		panic(panicked)
	}
	return a
}
