package wecom

import (
	"context"
	"log/slog"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// What happens to a call that is in flight when its caller, or the client,
// stops waiting for it. WeCom counts a call against its concurrency limit
// from the moment the request arrives until it answers, whatever the client
// does meanwhile; so a slot is given back only when the answer is in, or when
// the request surely never left.

// WithAbandonedHold sets how long the concurrency slots of an abandoned call
// (sent, and no answer came: the attempt timeout fired or the connection
// broke) stay taken, from the moment it was given up, because it may still be
// running at WeCom. They are not released and not renewed, and free
// themselves when the hold ends. The default is the lease TTL
// (WithLeaseTTL). A retry of the call waits for the hold of its per-resource
// slot, so it never overlaps the abandoned attempt on the same customer.
func WithAbandonedHold(d time.Duration) Option {
	return func(c *Client) error {
		if d < 100*time.Millisecond {
			return invalid("abandoned hold", "%s is under 100ms", d)
		}
		c.abandonedHold = d
		return nil
	}
}

func (c *Client) holdFor() time.Duration {
	if c.abandonedHold > 0 {
		return c.abandonedHold
	}
	return c.leaseTTL()
}

// wire learns from the HTTP layer whether a request may have reached the
// server: net/http reports getting a connection and writing the request
// through httptrace.
type wire struct {
	conn, wrote atomic.Bool
}

func (w *wire) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GetConn: func(string) { w.conn.Store(true) },
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				w.wrote.Store(true)
			}
		},
	}
}

// mayHaveArrived reports whether the request may be at the server: it was
// written to a connection, or the transport is not one that reports it
// (httpmock, a custom RoundTripper), in which case the answer is "maybe". A
// refused or failed dial, or a request cancelled before it was written, is
// known not to have left.
func (w *wire) mayHaveArrived() bool { return w.wrote.Load() || !w.conn.Load() }

// hold keeps the slots of a call that may still be running at WeCom: each
// is pushed to end holdFor from now and then left alone, neither released
// nor renewed. It reports whether the call held any slot.
func (c *Client) hold(ctx context.Context, path string, leases []throttle.Lease) bool {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	held := false
	for _, l := range leases {
		if !l.HoldsSlot() {
			continue
		}
		held = true
		if _, err := c.limiter.Extend(rctx, l, c.holdFor()); err != nil {
			c.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: could not extend the hold of an abandoned call", slog.String("key", l.Key), slog.String("error", err.Error()))
		}
	}
	if held {
		c.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: no answer to a call that was sent: its slots stay taken until the hold ends",
			slog.String("path", path), slog.Duration("hold", c.holdFor()))
	}
	return held
}

// tracker counts the attempts running in the background, for Drain.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

func (t *tracker) add() {
	t.mu.Lock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
}

func (t *tracker) done() {
	t.mu.Lock()
	t.n--
	if t.n == 0 {
		close(t.idle)
		t.idle = nil
	}
	t.mu.Unlock()
}

// Drain waits until every attempt of the client that may outlive its caller
// has ended, or until ctx ends (then it returns ctx.Err()). An attempt whose
// caller gave up goes on until WeCom answers or the attempt timeout fires,
// and gives its slots back only then; a program that is shutting down calls
// Drain (with a deadline) after its last call returns, so that the slots
// those attempts hold go back to the fleet instead of waiting for their TTL.
func (c *Client) Drain(ctx context.Context) error {
	c.background.mu.Lock()
	idle := c.background.idle
	c.background.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return c.Drain(ctx) // more may have started meanwhile
	case <-ctx.Done():
		return ctx.Err()
	}
}
