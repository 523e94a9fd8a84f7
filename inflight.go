package wecom

import (
	"context"
	"sync"
	"time"
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
	return func(c *config) error {
		if d < 100*time.Millisecond {
			return invalid("abandoned hold", "%s is under 100ms", d)
		}
		c.abandonedHold = d
		return nil
	}
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

// wait waits until no attempt runs in the background, or ctx ends.
func (t *tracker) wait(ctx context.Context) error {
	t.mu.Lock()
	idle := t.idle
	t.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return t.wait(ctx) // more may have started meanwhile
	case <-ctx.Done():
		return ctx.Err()
	}
}
