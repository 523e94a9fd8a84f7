// The line of waiters on one key, kept the same way by both backends:
// arrival order, and a key with a line refused to TryAcquire and queued
// behind by Acquire. Memory grants the head under its mutex (dispatch); on
// Redis the head asks Redis (REDIS.md, Waiting). And a backend's verdict
// on a request, and what a refusal means for those in line (fails).

package throttle

import (
	"container/list"
	"context"
	"iter"
	"time"
)

// waiter is one Acquire waiting in a line.
type waiter struct {
	req      Request
	deadline time.Time // zero: none
	elem     *list.Element
	// turn is closed when the line is done with the waiter: on the
	// in-process backend, once it is served (lease) or failed (err); on
	// Redis, once it heads the line and asks for it, or failed (err).
	turn  chan struct{}
	err   error
	lease Lease // in-process backend: the lease it was served
}

// newWaiter returns a waiter for r, whose deadline is ctx's.
func newWaiter(ctx context.Context, r Request) waiter {
	w := waiter{req: r, turn: make(chan struct{})}
	w.deadline, _ = ctx.Deadline()
	return w
}

// entry returns the waiter itself: the waiters of a line are *waiter, or a
// backend's type that embeds waiter.
func (w *waiter) entry() *waiter { return w }

// inLine is what a line holds: a waiter of one backend.
type inLine interface{ entry() *waiter }

// line is the queue of waiters on one key, in arrival order. The zero
// value is an empty line. Its owner's mutex guards it.
type line[W inLine] struct{ q list.List }

// push puts w at the back and reports whether it heads the line.
func (l *line[W]) push(w W) (head bool) {
	e := l.q.PushBack(w)
	w.entry().elem = e
	return l.q.Front() == e
}

// len returns the number of waiters in line.
func (l *line[W]) len() int { return l.q.Len() }

// head returns the first waiter (ok false: the line is empty).
func (l *line[W]) head() (w W, ok bool) {
	if e := l.q.Front(); e != nil {
		return e.Value.(W), true
	}
	return w, false
}

// all yields the waiters in arrival order.
func (l *line[W]) all() iter.Seq[W] {
	return func(yield func(W) bool) {
		for e := l.q.Front(); e != nil; e = e.Next() {
			if !yield(e.Value.(W)) {
				return
			}
		}
	}
}

// leave takes w out of the line (nothing if it left already) and reports
// whether it was the head.
func (l *line[W]) leave(w W) (wasHead bool) {
	e := w.entry().elem
	wasHead = l.q.Front() == e
	l.q.Remove(e) // a no-op once removed
	return wasHead
}

// done takes w out of the line with err (nil: served) and tells it.
func (l *line[W]) done(w W, err error) {
	l.leave(w)
	w.entry().err = err
	close(w.entry().turn)
}

// failBehind fails, with err, every waiter behind the head that gives up
// on the refusal v (see fails), whose limit frees up at at on the local
// clock; the head decides for itself.
func (l *line[W]) failBehind(v verdict, at time.Time, err error) {
	for e := l.q.Front(); e != nil; {
		w, next := e.Value.(W), e.Next()
		if e != l.q.Front() && v.fails(w.entry().req, w.entry().deadline, at) {
			l.done(w, err)
		}
		e = next
	}
}

// verdict is a backend's answer to a request: granted (ok), or refused.
type verdict struct {
	ok     bool
	reason Reason
	at     time.Time // when the refusing limit frees up; zero if unknown
	// members: for a request with Members, those without room
	members []string
}

// err returns the refusal v of a request on key as a LimitError at now.
func (v verdict) err(key string, now time.Time) *LimitError {
	e := &LimitError{Key: key, Reason: v.reason, Members: v.members}
	if v.reason != ReasonConcurrency && v.at.After(now) {
		e.RetryAfter = v.at.Sub(now)
	}
	return e
}

// fails reports whether a waiter for r whose deadline is deadline (zero:
// none) gives up on the refusal v, whose limit frees up at at on the local
// clock: a cooldown it does not wait out, or a rate window or cooldown
// known to open after its deadline. Want of a slot fails no waiter: a
// release comes at no known time.
func (v verdict) fails(r Request, deadline, at time.Time) bool {
	switch {
	case v.ok || !v.reason.timed():
		return false
	case v.reason == ReasonCooldown && !r.WaitCooldown:
		return true
	}
	return !deadline.IsZero() && !v.at.IsZero() && deadline.Before(at)
}
