// With slots, as both backends share them: the way apart that a request
// takes when one of its With slots is busy, releases one lease at a time,
// and the renewal of a lease with its With leases.

package throttle

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// errWithBusy is what a backend's grant path tells its Acquire when the
// request could be granted but a With slot is held: the request leaves its
// line holding nothing and is taken apart (acquireApart).
var errWithBusy = errors.New("throttle: a with slot is busy")

// acquireApart takes r's With slots one at a time, each waiting as an
// Acquire of it alone, then r without them, and returns r's lease with the
// With leases attached. A With lease's TTL runs while r waits: after a long
// wait they are renewed, and one that expired meanwhile (another call may
// hold its slot now) makes it start over. On a failure it releases what it
// took.
func acquireApart(ctx context.Context, b Backend, r Request) (Lease, error) {
	for {
		// In the order of their keys, so that two requests naming the
		// same slots in another order never wait on each other. The first
		// one's TTL runs from its grant.
		start := time.Now()
		with := make([]Lease, len(r.With))
		for _, i := range byKey(r.With) {
			l, err := b.Acquire(ctx, r.With[i])
			if err != nil {
				_ = releaseEach(ctx, b, with)
				return Lease{}, err
			}
			with[i] = l
		}
		l, err := b.Acquire(ctx, r.withless())
		if err != nil {
			_ = releaseEach(ctx, b, with)
			return Lease{}, err
		}
		l.With = with
		if time.Since(start) < shortestTTL(r.With)/4 {
			return l, nil
		}
		err = renew(ctx, b, with, r.With)
		if err == nil {
			return l, nil
		}
		_ = b.Release(context.WithoutCancel(ctx), l)
		if !errors.Is(err, ErrLeaseNotHeld) {
			return Lease{}, err
		}
	}
}

// byKey returns the indexes of rs in the order of their keys.
func byKey(rs []Request) []int {
	idx := make([]int, len(rs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(rs[a].Key, rs[b].Key) })
	return idx
}

// shortestTTL returns the shortest lease TTL of rs.
func shortestTTL(rs []Request) time.Duration {
	d := time.Duration(0)
	for _, r := range rs {
		if t := r.LeaseTTL(); d == 0 || t < d {
			d = t
		}
	}
	return d
}

// renew extends each of leases, granted for rs, by its request's TTL, and
// stops at the first failure.
func renew(ctx context.Context, b Backend, leases []Lease, rs []Request) error {
	for i, l := range leases {
		n, err := b.Extend(ctx, l, rs[i].LeaseTTL())
		if err != nil {
			return err
		}
		leases[i] = n
	}
	return nil
}

// tryApart is acquireApart without waiting: each slot is tried once.
func tryApart(ctx context.Context, b Backend, r Request) (Lease, error) {
	with, err := tryEach(ctx, b, r.With)
	if err != nil {
		return Lease{}, err
	}
	l, err := b.TryAcquire(ctx, r.withless())
	if err != nil {
		_ = releaseEach(ctx, b, with)
		return Lease{}, err
	}
	l.With = with
	return l, nil
}

// tryEach tries each of rs once, in order, and on a refusal gives back
// what it took.
func tryEach(ctx context.Context, b Backend, rs []Request) ([]Lease, error) {
	got := make([]Lease, 0, len(rs))
	for _, r := range rs {
		l, err := b.TryAcquire(ctx, r)
		if err != nil {
			_ = releaseEach(ctx, b, got)
			return nil, err
		}
		got = append(got, l)
	}
	return got, nil
}

// releaseEach releases leases one at a time, even when ctx has ended, and
// returns the first error.
func releaseEach(ctx context.Context, b Backend, leases []Lease) error {
	ctx = context.WithoutCancel(ctx)
	var first error
	for _, l := range leases {
		if err := b.Release(ctx, l); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// extendAll extends l's own slot (a lease without With leases is
// extended even without one, to be told it is not held) and each of its
// With leases with one, going on past a failure so that one lost lease
// does not cost the others theirs. It returns l updated and the first
// error.
func extendAll(ctx context.Context, l Lease, ttl time.Duration, one func(context.Context, Lease, time.Duration) (Lease, error)) (Lease, error) {
	var first error
	with := l.With
	l.With = nil
	if l.ownSlot() || len(with) == 0 {
		if n, err := one(ctx, l, ttl); err != nil {
			first = err
		} else {
			l = n
		}
	}
	if len(with) > 0 {
		l.With = make([]Lease, len(with))
		for i, s := range with {
			n, err := one(ctx, s, ttl)
			if err != nil {
				first = cmp.Or(first, err)
				n = s
			}
			l.With[i] = n
		}
	}
	return l, first
}
