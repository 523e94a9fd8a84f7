package throttle

import (
	"context"
	"slices"
	"sync"
	"time"
)

// MemberLines orders a process's waiters for requests with Members: one
// line per member key, in arrival order. A waiter asks its backend only
// when it is first in the line of every member it names, and keeps that
// place while it waits for them to have room, so that no later request
// overtakes it on a member they share and it is not starved; requests
// naming none of its members go on meanwhile. A waiter joins all its
// lines at once, under one lock, so the lines agree on the order of any
// two waiters and none waits on another in a cycle. The zero value is
// ready to use.
type MemberLines struct {
	mu    sync.Mutex
	lines map[string][]*memberWaiter // by member key
}

// memberWaiter is one request in the lines of its members.
type memberWaiter struct {
	keys  []string
	ahead int           // the lines where another waiter is first
	turn  chan struct{} // closed once ahead is 0
}

// Busy returns the members of r for whom a waiter of this process is in
// line: a TryAcquire of r would overtake it.
func (ml *MemberLines) Busy(r Request) []string {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	var out []string
	for _, m := range r.Members {
		if len(ml.lines[MemberKey(r.Key, m)]) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// join puts a waiter for r at the back of its members' lines.
func (ml *MemberLines) join(r Request) *memberWaiter {
	w := &memberWaiter{turn: make(chan struct{})}
	ml.mu.Lock()
	defer ml.mu.Unlock()
	if ml.lines == nil {
		ml.lines = make(map[string][]*memberWaiter)
	}
	for _, m := range r.Members {
		k := MemberKey(r.Key, m)
		if len(ml.lines[k]) > 0 {
			w.ahead++
		}
		ml.lines[k] = append(ml.lines[k], w)
		w.keys = append(w.keys, k)
	}
	if w.ahead == 0 {
		close(w.turn)
	}
	return w
}

// leave takes w out of its lines, and lets the waiters it was first
// before come forward.
func (ml *MemberLines) leave(w *memberWaiter) {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	for _, k := range w.keys {
		line := ml.lines[k]
		i := slices.Index(line, w)
		line = slices.Delete(line, i, i+1)
		if len(line) == 0 {
			delete(ml.lines, k)
			continue
		}
		ml.lines[k] = line
		if next := line[0]; i == 0 {
			if next.ahead--; next.ahead == 0 {
				close(next.turn)
			}
		}
	}
}

// Acquire is Acquire of a request with Members: it waits for its turn in
// its members' lines, then tries until granted, waiting between tries
// for the time the refusal names; it fails at once when that time is past
// ctx's deadline. With !wait it is TryAcquire: refused while a waiter of
// this process is in line for one of its members, else tried once. A try
// returns a lease, or the refusal v at now by the backend's clock, or an
// error that ends the acquisition.
func (ml *MemberLines) Acquire(ctx context.Context, r Request, wait bool, try func(context.Context, Request) (l Lease, v Verdict, now time.Time, err error)) (Lease, error) {
	if !wait {
		if busy := ml.Busy(r); len(busy) > 0 {
			return Lease{}, &LimitError{Key: r.Key, Reason: ReasonConcurrency, Members: busy}
		}
	} else {
		w := ml.join(r)
		defer ml.leave(w)
		select {
		case <-w.turn:
		case <-ctx.Done():
			return Lease{}, ctx.Err()
		}
	}
	deadline, _ := ctx.Deadline()
	var t Told
	for {
		l, v, now, err := try(ctx, r)
		if err != nil || v.OK {
			return l, err
		}
		at := time.Now().Add(time.Second) // a refusal of no known end: ask again
		if !v.At.IsZero() {
			at = time.Now().Add(v.At.Sub(now))
		}
		if !wait || v.Fails(r, deadline, at) {
			return Lease{}, v.Err(r.Key, now)
		}
		if t.News(v, at) {
			Stalled(r, v, at)
		}
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			return Lease{}, ctx.Err()
		}
	}
}
