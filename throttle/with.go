// With slots, as both backends share them: the way apart that a request
// takes when one of its With slots is busy, releases one lease at a time,
// and the renewal of a lease with its With leases.

package throttle

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"
)

// AcquireApart takes r's With slots one at a time, each as an Acquire of
// it alone (!wait: a TryAcquire), then r without them, and returns r's
// lease with the With leases attached. A With lease's TTL runs while r
// waits: after a long wait they are renewed, and one that expired
// meanwhile (another call may hold its slot now) makes it start over. So
// they are when era (nil: a backend that never loses its state) changed
// while r got them: the backend may have forgotten one, and another call
// taken it. On a failure it releases what it took.
func AcquireApart(ctx context.Context, b Backend, r Request, wait bool, era func() uint64) (Lease, error) {
	acquire := b.TryAcquire
	if wait {
		acquire = b.Acquire
	}
	// In the order of their keys, so that two requests naming the same
	// slots in another order never wait on each other.
	order := make([]int, len(r.With))
	shortest := time.Duration(math.MaxInt64) // the shortest TTL of the slots
	for i, s := range r.With {
		order[i] = i
		shortest = min(shortest, s.LeaseTTL())
	}
	slices.SortFunc(order, func(i, j int) int { return strings.Compare(r.With[i].Key, r.With[j].Key) })
	own := r
	own.With = nil
	eraNow := func() uint64 { return 0 }
	if era != nil {
		eraNow = era
	}
	for {
		start, began := time.Now(), eraNow() // the first slot's TTL runs from its grant
		with := make([]Lease, len(r.With))
		for _, i := range order {
			s := r.With[i]
			if s.OnStall == nil { // a With slot's wait is r's
				s.OnStall = r.OnStall
			}
			l, err := acquire(ctx, s)
			if err != nil {
				_ = ReleaseEach(ctx, b, with)
				return Lease{}, err
			}
			with[i] = l
		}
		l, err := acquire(ctx, own)
		if err != nil {
			_ = ReleaseEach(ctx, b, with)
			return Lease{}, err
		}
		l.With = with
		if (!wait || time.Since(start) < shortest/4) && eraNow() == began {
			return l, nil
		}
		for i, s := range with { // renewed, up to the first failure
			if s, err = b.Extend(ctx, s, r.With[i].LeaseTTL()); err != nil {
				break
			}
			with[i] = s
		}
		if err == nil {
			return l, nil
		}
		_ = b.Release(context.WithoutCancel(ctx), l)
		if !errors.Is(err, ErrLeaseNotHeld) {
			return Lease{}, err
		}
	}
}

// ReleaseEach releases leases one at a time, even when ctx has ended, and
// returns the first error.
func ReleaseEach(ctx context.Context, b Backend, leases []Lease) error {
	var first error
	if len(leases) > 0 {
		ctx = context.WithoutCancel(ctx)
	}
	for _, l := range leases {
		first = cmp.Or(first, b.Release(ctx, l))
	}
	return first
}

// ExtendAll extends l's own slot (a lease without With leases is
// extended even without one, to be told it is not held) and each of its
// With leases with one, which returns the lease it was given when it
// fails, going on past a failure so that one lost lease does not cost the
// others theirs. It returns l updated and the first error.
func ExtendAll(ctx context.Context, l Lease, ttl time.Duration, one func(context.Context, Lease, time.Duration) (Lease, error)) (Lease, error) {
	var first, err error
	with := append([]Lease(nil), l.With...) // the caller's stays as it was
	l.With = nil
	if l.OwnSlot() || len(with) == 0 {
		l, first = one(ctx, l, ttl)
	}
	for i, s := range with {
		with[i], err = one(ctx, s, ttl)
		first = cmp.Or(first, err)
	}
	l.With = with
	return l, first
}
