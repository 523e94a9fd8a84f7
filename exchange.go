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

// sending is what an attempt sends with: the credential's value, or the
// error that keeps it from being sent (the limits, the credential, the
// caller gone).
type sending struct {
	tok string
	err error
}

// attemptResult is what an attempt run in the background hands its caller.
type attemptResult struct {
	a        Attempt
	panicked any // re-panicked in the caller
}

// exchange sends the call, which holds the leases t took (renewed until
// settled), unless s says why not, and waits for its answer. When ctx ends
// first, exchange returns ctx's error at once and the attempt goes on in
// the background under the client's attempt timeout, its leases going back
// when the answer arrives (see Client.Drain). A panic in the background
// reaches the caller, or is logged when the caller has gone.
func (p *pipeline) exchange(ctx context.Context, cl *call, el *endpointLimits, t taken, s sending, a Attempt) error {
	var r attemptResult
	private := reflect.Value{}
	if s.err != nil || ctx.Done() == nil { // nothing to send, or a caller who cannot give up: no goroutine needed
		r.a = p.roundTrip(ctx, cl, el, t, s, a)
	} else {
		// The answer is decoded into a value of the attempt's own, handed
		// to the caller's only when the caller takes the answer: a caller
		// that left never sees its out written behind its back.
		var bg *call
		bg, private = cl.detached()
		answered := make(chan attemptResult)
		p.background.add()
		go func() {
			defer p.background.done()
			var r attemptResult
			func() {
				defer func() { r.panicked = recover() }()
				r.a = p.roundTrip(ctx, bg, el, t, s, a)
			}()
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
// unless s holds an error, and then settles them (settle): a panic while
// the request may have left settles them as for no answer.
func (p *pipeline) roundTrip(ctx context.Context, cl *call, el *endpointLimits, t taken, s sending, a Attempt) (out Attempt) {
	unanswered := s.err == nil // until the send says: a panic may come after the request left
	a.Err = s.err
	defer func() { out = p.settle(ctx, cl, el, t, s.err == nil, unanswered, a) }()
	if s.err == nil {
		start := time.Now()
		unanswered, a.Err = p.send(ctx, cl, s.tok)
		a.Duration = time.Since(start)
	}
	return a
}
