package wecom

import (
	"context"
	"sync"
)

// What happens to a call that is in flight when its caller, or the client,
// stops waiting for it. WeCom counts a call against its concurrency limit
// from the moment the request arrives until it answers, whatever the client
// does meanwhile; so a slot is given back only when the answer is in, or when
// the request surely never left.

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
