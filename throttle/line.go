// The line of waiters on one key, kept the same way by both backends:
// arrival order, and a key with a line refused to TryAcquire and queued
// behind by Acquire. Memory grants the head under its mutex (dispatch); on
// Redis the head asks Redis (throttle/redis/REDIS.md, Waiting). And a backend's verdict
// on a request, and what a refusal means for those in line (fails).

package throttle

import (
	"container/list"
	"context"
	"iter"
	"time"
)

// Waiter is one Acquire waiting in a line.
type Waiter struct {
	Req      Request
	Deadline time.Time // zero: none
	elem     *list.Element
	// Turn is closed when the line is done with the waiter: on the
	// in-process backend, once it is served (lease) or failed (err); on
	// Redis, once it heads the line and asks for it, or failed (err).
	Turn  chan struct{}
	Err   error
	lease Lease // in-process backend: the lease it was served
}

// NewWaiter returns a waiter for r, whose deadline is ctx's.
func NewWaiter(ctx context.Context, r Request) Waiter {
	w := Waiter{Req: r, Turn: make(chan struct{})}
	w.Deadline, _ = ctx.Deadline()
	return w
}

// entry returns the waiter itself: the waiters of a line are *waiter, or a
// backend's type that embeds waiter.
func (w *Waiter) entry() *Waiter { return w }

// InLine is what a line holds: a waiter of one backend.
type InLine interface{ entry() *Waiter }

// Line is the queue of waiters on one key, in arrival order. The zero
// value is an empty Line. Its owner's mutex guards it.
type Line[W InLine] struct{ q list.List }

// Push puts w at the back and reports whether it heads the line.
func (l *Line[W]) Push(w W) (head bool) {
	e := l.q.PushBack(w)
	w.entry().elem = e
	return l.q.Front() == e
}

// Len returns the number of waiters in line.
func (l *Line[W]) Len() int { return l.q.Len() }

// Head returns the first waiter (ok false: the line is empty).
func (l *Line[W]) Head() (w W, ok bool) {
	if e := l.q.Front(); e != nil {
		return e.Value.(W), true
	}
	return w, false
}

// All yields the waiters in arrival order.
func (l *Line[W]) All() iter.Seq[W] {
	return func(yield func(W) bool) {
		for e := l.q.Front(); e != nil; e = e.Next() {
			if !yield(e.Value.(W)) {
				return
			}
		}
	}
}

// Leave takes w out of the line (nothing if it left already) and reports
// whether it was the head.
func (l *Line[W]) Leave(w W) (wasHead bool) {
	e := w.entry().elem
	wasHead = l.q.Front() == e
	l.q.Remove(e) // a no-op once removed
	return wasHead
}

// done takes w out of the line with err (nil: served) and tells it.
func (l *Line[W]) done(w W, err error) {
	l.Leave(w)
	w.entry().Err = err
	close(w.entry().Turn)
}

// FailBehind fails, with err, every waiter behind the head that gives up
// on the refusal v (see fails), whose limit frees up at at on the local
// clock; the head decides for itself.
func (l *Line[W]) FailBehind(v Verdict, at time.Time, err error) {
	for e := l.q.Front(); e != nil; {
		w, next := e.Value.(W), e.Next()
		if e != l.q.Front() && v.Fails(w.entry().Req, w.entry().Deadline, at) {
			l.done(w, err)
		}
		e = next
	}
}

// Verdict is a backend's answer to a request: granted (ok), or refused.
type Verdict struct {
	OK     bool
	Reason Reason
	At     time.Time // when the refusing limit frees up; zero if unknown
	// Members: for a request with Members, those without room
	Members []string
}

// Err returns the refusal v of a request on key as a LimitError at now.
func (v Verdict) Err(key string, now time.Time) *LimitError {
	e := &LimitError{Key: key, Reason: v.Reason, Members: v.Members}
	if v.Reason != ReasonConcurrency && v.At.After(now) {
		e.RetryAfter = v.At.Sub(now)
	}
	return e
}

// Fails reports whether a waiter for r whose deadline is deadline (zero:
// none) gives up on the refusal v, whose limit frees up at at on the local
// clock: a cooldown it does not wait out, or a rate window or cooldown
// known to open after its deadline. Want of a slot fails no waiter: a
// release comes at no known time.
func (v Verdict) Fails(r Request, deadline, at time.Time) bool {
	switch {
	case v.OK || !v.Reason.Timed():
		return false
	case v.Reason == ReasonCooldown && !r.WaitCooldown:
		return true
	}
	return !deadline.IsZero() && !v.At.IsZero() && deadline.Before(at)
}
