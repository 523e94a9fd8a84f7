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
	// seenLate: the deduper's Seen did not answer in time (see forget).
	seenLate bool
}

// queue is WithQueue's bounded channel and its workers.
type queue struct {
	mu     sync.RWMutex // held to send, and to close
	closed bool
	ch     chan job
}

// startQueue starts the workers.
func (h *Handler) startQueue() {
	h.q = &queue{ch: make(chan job, h.cfg.queueSize)}
	for range h.cfg.workers {
		h.bg.add()
		go func() {
			defer h.bg.done()
			h.work()
		}()
	}
}

// work runs queued callbacks until the queue is closed and empty.
func (h *Handler) work() {
	for j := range h.q.ch {
		if h.life.Err() != nil { // Close gave up waiting
			h.stats.lost.Add(1)
			h.log.LogAttrs(j.ctx, slog.LevelError, "callback: dropped from the queue at Close, callback lost (WeCom will not retry it)", slog.String("kind", j.kind))
			continue
		}
		ctx, cancel := context.WithTimeout(j.ctx, h.cfg.timeout)
		stop := context.AfterFunc(h.life, cancel)
		reply, err := h.call(ctx, j)
		stop()
		switch {
		case err != nil:
			h.lost(ctx, j, err)
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
	h.refuse(w, r, j, answerBy, budget, "queue full or closed", slog.Int("size", cap(q.ch)))
}

// refuse answers 503, so that WeCom tries again later, having forgotten
// the callback so that its retry is delivered; it logs and counts why.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, j job, answerBy time.Time, budget time.Duration, why string, attr slog.Attr) {
	h.stats.refused.Add(1)
	h.forget(r.Context(), j.key, j.seenLate, answerBy.Add(marginOf(budget)))
	h.log.LogAttrs(r.Context(), slog.LevelWarn, "callback: "+why+", refused",
		slog.String("kind", j.kind), attr, slog.String("remote", r.RemoteAddr))
	http.Error(w, "busy", http.StatusServiceUnavailable)
}

// tracker counts goroutines that Close waits for. Unlike a
// sync.WaitGroup, it may go from zero up again while someone waits.
type tracker struct {
	mu     sync.Mutex
	n      int
	idleCh chan struct{} // closed when n drops to 0
}

func (t *tracker) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idleCh = make(chan struct{})
	}
	t.n++
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n--; t.n == 0 {
		close(t.idleCh)
	}
}

// idle returns a channel closed once nothing is counted.
func (t *tracker) idle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return t.idleCh
}

// Close stops a Handler made WithQueue from taking callbacks (they are
// refused with 503 from then on) and waits, until ctx is done, for the
// workers to finish those queued, for the handlers still running in line
// past their deadline, and for the deduper calls still under way. If ctx
// ends first, Close cancels the contexts of the queued handlers running,
// drops those not started (counted in Stats.Lost) and returns ctx's error;
// a handler that ignores its context may still be running then. Close is
// safe to call more than once.
func (h *Handler) Close(ctx context.Context) error {
	if q := h.q; q != nil {
		q.mu.Lock()
		if !q.closed {
			q.closed = true
			close(q.ch)
		}
		q.mu.Unlock()
	}
	select {
	case <-h.bg.idle():
		return nil
	case <-ctx.Done():
		h.stop()
		return ctx.Err()
	}
}
