package callback

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// job is a callback on its way to its handler.
type job struct {
	ctx  context.Context
	fn   route
	ev   Event
	key  string
	kind string
}

// queue is WithQueue's bounded channel and its workers.
type queue struct {
	mu     sync.RWMutex // held to send, and to close
	closed bool
	ch     chan job
	wg     sync.WaitGroup
}

// startQueue starts the workers.
func (h *Handler) startQueue() {
	h.q = &queue{ch: make(chan job, h.cfg.queueSize)}
	for range h.cfg.workers {
		h.q.wg.Go(h.work)
	}
}

// work runs queued callbacks until the queue is closed and empty.
func (h *Handler) work() {
	for j := range h.q.ch {
		ctx, cancel := context.WithTimeout(j.ctx, h.cfg.timeout)
		reply, err := h.call(ctx, j)
		switch {
		case err != nil:
			h.failed(ctx, j, err, time.Now().Add(DefaultTimeout/dedupeShare))
		case reply != nil:
			h.stats.delivered.Add(1)
			h.log.LogAttrs(ctx, slog.LevelWarn, "callback: queued handler's reply dropped (a reply needs the request)", slog.String("kind", j.kind))
		default:
			h.stats.delivered.Add(1)
		}
		cancel()
	}
}

// serveQueued hands a callback to the workers and acknowledges it, or
// refuses it when the queue is full or closed.
func (h *Handler) serveQueued(w http.ResponseWriter, r *http.Request, p *probe, j job, answerBy time.Time, budget time.Duration) {
	q := h.q
	q.mu.RLock()
	ok := false
	if !q.closed {
		select {
		case q.ch <- j:
			ok = true
		default:
		}
	}
	q.mu.RUnlock()
	if ok {
		h.ack(w, p)
		return
	}
	h.stats.refused.Add(1)
	// Forget it, so that WeCom's retry of the refused callback is delivered.
	h.forget(r.Context(), j.key, answerBy.Add(marginOf(budget)))
	h.log.LogAttrs(r.Context(), slog.LevelWarn, "callback: queue full or closed, refused",
		slog.String("kind", j.kind), slog.Int("size", cap(q.ch)), slog.String("remote", r.RemoteAddr))
	http.Error(w, "busy", http.StatusServiceUnavailable)
}

// Close stops a Handler made WithQueue from taking callbacks (they are
// refused with 503 from then on) and waits, until ctx is done, for the
// workers to finish those queued, for the handlers still running past
// their deadline, and for the deduper calls still under way. It returns
// ctx's error if they have not finished. Close is safe to call more than
// once.
func (h *Handler) Close(ctx context.Context) error {
	if q := h.q; q != nil {
		q.mu.Lock()
		if !q.closed {
			q.closed = true
			close(q.ch)
		}
		q.mu.Unlock()
	}
	done := make(chan struct{})
	go func() {
		if h.q != nil {
			h.q.wg.Wait()
		}
		h.bg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
