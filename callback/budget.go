package callback

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// A callback's time budget starts when its request arrives. Seen may take
// a quarter of it (dedupeShare); a Forget after a handler failed may run
// past the deadline by an eighth of the budget, forgetMargin at most
// (marginOf). A Deduper that has not
// answered by then is left to finish on its own (its context is
// cancelled): Seen counts as "not seen" (the callback is delivered), and a
// late Forget marks the key for redelivery in this Handler, so WeCom's
// retry of a failed callback is delivered even if the Forget lands after
// it.
const (
	dedupeShare  = 4
	forgetMargin = 500 * time.Millisecond
)

// marginOf is how far past a budget of d a failed handler's Forget may
// delay the answer.
func marginOf(d time.Duration) time.Duration { return min(d/8, forgetMargin) }

// seen asks the deduper whether key was delivered, waiting until by at
// most. A deduper that fails or is late is logged and taken as "not
// seen": delivering a retry twice is better than losing an event. A key
// marked for redelivery (a Forget that was late) is "not seen" once.
// late reports a Seen that did not answer in time: it may record the key
// after a Forget, so a failure of that callback marks it for redelivery.
func (h *Handler) seen(ctx context.Context, key, kind string, by time.Time) (seen, late bool) {
	seen, err := bounded(h, ctx, by, func(ctx context.Context) (bool, error) {
		return h.cfg.dedupe.Seen(ctx, key, h.cfg.ttl)
	})
	switch {
	case err != nil:
		h.log.LogAttrs(ctx, slog.LevelWarn, "callback: deduper failed, delivering", slog.String("kind", kind), slog.String("error", err.Error()))
		return false, errors.Is(err, errLate)
	case seen && h.redeliver.take(key):
		h.log.LogAttrs(ctx, slog.LevelInfo, "callback: retry of a failed callback whose forget was late, delivering", slog.String("kind", kind))
		return false, false
	}
	return seen, false
}

// forget removes key from the deduper, waiting until by at most (even if
// ctx is done). If the deduper fails or is late, or its Seen of the key was
// late (seenLate: it may record the key after this), the key is marked for
// redelivery in this Handler, so that WeCom's retry is delivered here.
func (h *Handler) forget(ctx context.Context, key string, seenLate bool, by time.Time) {
	_, err := bounded(h, context.WithoutCancel(ctx), by, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, h.cfg.dedupe.Forget(ctx, key)
	})
	if err != nil || seenLate {
		h.redeliver.put(key, time.Now().Add(h.cfg.ttl))
	}
	if err != nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "callback: deduper forget failed, its retry will be delivered by this process", slog.String("error", err.Error()))
	}
}

// errLate is a deduper call that did not answer in its time.
var errLate = errors.New("callback: deduper did not answer in time")

// bounded runs call with a context ending at by and returns its answer, or
// errLate at by if it has not answered; a late call goes on in its own
// goroutine (counted in h.bg, which Close waits for) until it returns.
// The in-memory deduper never blocks and is called directly.
func bounded[T any](h *Handler, ctx context.Context, by time.Time, call func(context.Context) (T, error)) (T, error) {
	if _, ok := h.cfg.dedupe.(*MemoryDeduper); ok {
		return call(ctx)
	}
	ctx, cancel := context.WithDeadline(ctx, by)
	defer cancel()
	type answer struct {
		v   T
		err error
	}
	done := make(chan answer, 1)
	h.bg.add()
	go func() {
		defer h.bg.done()
		v, err := call(ctx)
		done <- answer{v, err}
	}()
	select {
	case a := <-done:
		return a.v, a.err
	case <-ctx.Done():
		select {
		case a := <-done:
			return a.v, a.err
		default:
			var zero T
			return zero, errLate
		}
	}
}

// redeliverSet holds the keys whose Forget was late or failed, until their
// expiry, so that WeCom's retry of the failed callback is delivered.
type redeliverSet struct {
	mu   sync.Mutex
	keys map[string]time.Time
}

// redeliverMax bounds the set; when full, expired keys are dropped, then
// the new key is not kept (its retry may then be taken for a duplicate).
const redeliverMax = 4096

func (s *redeliverSet) put(key string, exp time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[string]time.Time)
	}
	if len(s.keys) >= redeliverMax {
		now := time.Now()
		for k, e := range s.keys {
			if !e.After(now) {
				delete(s.keys, k)
			}
		}
		if len(s.keys) >= redeliverMax {
			return
		}
	}
	s.keys[key] = exp
}

// take reports whether key is marked (and not expired), unmarking it.
func (s *redeliverSet) take(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.keys[key]
	if ok {
		delete(s.keys, key)
	}
	return ok && exp.After(time.Now())
}
