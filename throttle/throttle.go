// Package throttle limits how many operations may run at once and how many may
// start per time window, per key, across goroutines and (with a shared backend)
// across processes.
//
// One [Backend.Acquire] checks and takes, all or nothing, three kinds of limit
// on a key, with the concurrency slots of other keys named in [Request.With]
// (a customer's lock beside an API's slot):
//
//   - concurrency: at most [Request.Concurrency] leases on a key at once. A lease
//     is released with [Backend.Release], or frees its slot when its TTL ends
//     (its holder crashed); [Backend.Extend] pushes the end out.
//   - rate windows: for every [Window] in [Request.Windows], never more than
//     Window.Limit acquisitions in any sliding interval of length Window.Period.
//     Several windows (10,000 a minute and 150,000 an hour, say) apply together.
//   - cooldown: [Backend.Cooldown] blocks a key until a time, for an upstream
//     "you are blocked for the rest of the window" answer.
//
// Acquire waits, bounded by its context, and TryAcquire refuses at once with a
// [*LimitError] that says why and, where known, for how long. A window is
// kept in [BucketsPerWindow] buckets, which bounds its precision.
//
// [Memory] is the in-process backend and the default of the wecom client;
// package throttle/redis shares the limits among every process using one
// Redis; this package links no Redis code. Both pass the conformance suite
// in package throttletest.
//
// # Writing a backend
//
// A backend of its own keeps the package's promises with the parts both
// backends here are made of: a [Line] of [Waiter]s per key, in arrival
// order, failing those behind a refusal they would not wait out
// ([Verdict.Fails]); [MemberLines] for requests with Members;
// [AcquireApart], [ReleaseEach] and [ExtendAll] for With slots; [Stalled]
// and [Told] to tell a request's [Request.OnStall] of its waits; and
// [Request.Merged] and [Request.Units] to read a request as the backends
// do. The conformance suite in throttletest checks the result. A backend
// whose store may lose its state (restarted empty) implements [Eras], so
// that a caller holding one of its leases while it waits for something
// else learns that the lease may be forgotten.
package throttle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// BucketsPerWindow is how many buckets a rate window's history is divided
// into, of Period/BucketsPerWindow each. The oldest, partly expired bucket
// is still counted in full: the limit is never exceeded in any sliding
// window, a caller that saturates a window still gets
// BucketsPerWindow/(BucketsPerWindow+1), 99%, of Limit/Period, and the
// memory per key is bounded by the number of buckets, not of calls.
const BucketsPerWindow = 100

// DefaultTTL is the lease TTL used when a Request asks for a concurrency slot and
// leaves TTL zero.
const DefaultTTL = time.Minute

// Window is a sliding rate window: at most Limit acquisitions in any interval of
// length Period.
type Window struct {
	Limit  int
	Period time.Duration
}

// String returns the window as "limit/period", for example "10000/1m0s".
func (w Window) String() string { return fmt.Sprintf("%d/%s", w.Limit, w.Period) }

// Request says what one acquisition takes from a key.
type Request struct {
	// Key names the limited resource. Backends may prefix it; it must not hold
	// secrets because backends may store or log it.
	Key string
	// Concurrency is the most leases that may be held on Key at once.
	// Zero means no concurrency limit: the lease then holds no slot.
	Concurrency int
	// TTL is how long a concurrency slot is held if the lease is not released or
	// extended. Zero means DefaultTTL. Ignored when Concurrency is zero.
	TTL time.Duration
	// Windows are the rate windows the acquisition counts against, all of them.
	// Windows of the same Period are one window: the smallest Limit
	// applies, and an acquisition counts once.
	Windows []Window
	// WaitCooldown makes Acquire wait for a cooldown on Key to end (as it waits
	// for a slot or a window) instead of failing at once with ReasonCooldown.
	WaitCooldown bool
	// Weight is how many units the acquisition counts in every window of
	// Windows (a message to N members counts N against a recipient quota).
	// Zero means 1. It does not change the slots: a lease holds one. A
	// weighted waiter keeps its place in line until its weight fits.
	Weight int
	// With are concurrency slots on other keys taken together with this
	// request, all or nothing: a per-customer lock beside an API's slot,
	// say. Each is a slot alone (Concurrency > 0; no Windows, Weight,
	// WaitCooldown or With of its own) on a key of its own. A held With
	// slot never keeps Key's capacity idle: Acquire then waits for the
	// With slots one at a time, holding nothing on Key, and queues for
	// Key after.
	With []Request
	// Members, when set, count Windows on each member's key,
	// MemberKey(Key, member), instead of on Key: Weight units each, all
	// members or none in one step (one round trip on Redis). Acquire waits
	// until every member has room; a refusal names the members without
	// room (LimitError.Members). Requests with Members hold no slot (no
	// Concurrency, no With); a Cooldown on Key applies to them.
	Members []string
	// OnStall, when set, hears of each Stall ahead of Acquire: when it
	// arrives behind a timed refusal, when the head of its key's line is
	// refused so (on Redis, a process's waiters of a key queue behind one
	// head), and when its backend's store has not answered for StallAfter
	// or is known down. Its With slots' waits are told to it too. A
	// backend that cannot tell of a stall ignores it; it limits nothing.
	OnStall StallFunc
}

// MemberKey is the key of a member of a request's Members, on which its
// Windows count: key, a bar, the member.
func MemberKey(key, member string) string { return key + "|" + member }

// Units returns what the acquisition counts in its windows.
func (r Request) Units() int { return max(r.Weight, 1) }

// Validate reports whether r is well formed. Its errors match ErrInvalidRequest.
func (r Request) Validate() error {
	switch {
	case r.Key == "":
		return invalidf("empty key")
	case r.Concurrency < 0:
		return invalidf("key %q: negative concurrency %d", r.Key, r.Concurrency)
	case r.TTL < 0:
		return invalidf("key %q: negative TTL %s", r.Key, r.TTL)
	case r.Weight < 0:
		return invalidf("key %q: negative weight %d", r.Key, r.Weight)
	}
	for i, s := range r.With {
		switch {
		case s.Key == "" || s.Key == r.Key:
			return invalidf("key %q: with slot %d: key %q must be another key", r.Key, i, s.Key)
		case s.Concurrency <= 0 || s.TTL < 0:
			return invalidf("key %q: with slot %q: concurrency %d and TTL %s: a with slot is a concurrency slot", r.Key, s.Key, s.Concurrency, s.TTL)
		case len(s.Windows) > 0 || s.Weight < 0 || s.Weight > 1 || s.WaitCooldown || len(s.With) > 0:
			return invalidf("key %q: with slot %q: only a concurrency slot, without windows, weight, WaitCooldown or with slots", r.Key, s.Key)
		case slices.ContainsFunc(r.With[:i], func(t Request) bool { return t.Key == s.Key }):
			return invalidf("key %q: with slot %q named twice", r.Key, s.Key)
		}
	}
	if len(r.Members) > 0 && (r.Concurrency > 0 || len(r.With) > 0 || len(r.Windows) == 0) {
		return invalidf("key %q: members: rate windows only, without concurrency or with slots", r.Key)
	}
	seen := make(map[string]bool, len(r.Members))
	for _, m := range r.Members {
		switch {
		case m == "" || strings.ContainsAny(m, "\r\n"):
			return invalidf("key %q: member %q: empty or holding a line break", r.Key, m)
		case seen[m]:
			return invalidf("key %q: member %q named twice", r.Key, m)
		}
		seen[m] = true
	}
	for _, w := range r.Windows {
		if w.Limit <= 0 || w.Period < BucketsPerWindow {
			return invalidf("key %q: window %s: limit must be positive and period at least %dns", r.Key, w, BucketsPerWindow)
		}
		if r.Units() > w.Limit {
			return invalidf("key %q: weight %d over window %s: it could never be granted", r.Key, r.Weight, w)
		}
	}
	return nil
}

// Merged returns r with its windows of one period made one, with the
// smallest limit (see Request.Windows).
func (r Request) Merged() Request {
	dup := false
	for i, w := range r.Windows {
		dup = dup || slices.ContainsFunc(r.Windows[:i], func(v Window) bool { return v.Period == w.Period })
	}
	if !dup {
		return r
	}
	var ws []Window // a new slice: the caller's stays as it was
	for _, w := range r.Windows {
		if i := slices.IndexFunc(ws, func(v Window) bool { return v.Period == w.Period }); i >= 0 {
			ws[i].Limit = min(ws[i].Limit, w.Limit)
		} else {
			ws = append(ws, w)
		}
	}
	r.Windows = ws
	return r
}

// LeaseTTL returns the TTL the lease of r gets: r.TTL, or DefaultTTL when zero.
func (r Request) LeaseTTL() time.Duration { return cmp.Or(r.TTL, DefaultTTL) }

// Lease is the proof of one acquisition. It is a value: copy it freely, release it
// once.
type Lease struct {
	// Key is the request's key.
	Key string
	// ID identifies the lease within its backend.
	ID string
	// Granted is when the backend granted the lease, by the backend's clock. It is
	// the instant the rate windows counted: for a lease the Redis backend
	// handed on from window units taken ahead, the end of their block, up
	// to a second after the grant (see throttle/redis/REDIS.md).
	Granted time.Time
	// Expires is when the concurrency slot frees itself if not released or
	// extended, by the backend's clock; zero if the lease holds no slot.
	Expires time.Time
	// Concurrency is the cap the slot was granted under: the request's, or
	// a lower limit learned on the key (see LimitStore); zero if the lease
	// holds no slot.
	Concurrency int
	// With are the leases of the request's With slots, in its order.
	// Release and Extend of the lease act on them too.
	With []Lease
}

// HoldsSlot reports whether the lease holds a concurrency slot, its own or
// a With lease's, that must be released.
func (l Lease) HoldsSlot() bool { return !l.Expires.IsZero() || len(l.With) > 0 }

// OwnSlot reports whether the lease itself, its With leases aside, holds a
// slot.
func (l Lease) OwnSlot() bool { return !l.Expires.IsZero() }

// Backend is a limiter store. Implementations are safe for concurrent use.
type Backend interface {
	// TryAcquire takes what r asks for if all of it is free now, and otherwise
	// takes nothing and returns a *LimitError.
	TryAcquire(ctx context.Context, r Request) (Lease, error)
	// Acquire is TryAcquire that waits, in arrival order per key, until all of r
	// is free or ctx ends. When the wait is known to outlast ctx's deadline (a
	// rate window or a cooldown), it fails at once with a *LimitError. When ctx
	// ends first it returns ctx.Err() and holds nothing.
	Acquire(ctx context.Context, r Request) (Lease, error)
	// Release frees the lease's concurrency slot, and those of its With
	// leases, at once and hands them to the next waiters. It returns
	// ErrLeaseNotHeld when one had already expired or been released (the
	// others are released all the same). Releasing a lease that holds no
	// slot does nothing.
	Release(ctx context.Context, l Lease) error
	// Extend moves the expiry of the lease and of its With leases to ttl
	// from now and returns the updated lease, or ErrLeaseNotHeld when one
	// has already expired or been released.
	Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Cooldown refuses every acquisition on key for d from now (a later end
	// already in force is kept). Waiters that do not wait out cooldowns fail.
	Cooldown(ctx context.Context, key string, d time.Duration) error
}

// Eras is implemented by a Backend that may lose what it counts (its store
// restarted empty): Era changes whenever that may have happened. A caller
// that holds a lease while it waits for something else (another lease, a
// credential) compares the era before it asked with the era when it is
// about to use the lease; when it changed, the lease may be forgotten, its
// slot granted to another call, and an Extend of it tells
// (ErrLeaseNotHeld). The Redis backend implements it; the in-memory one
// never loses its state.
type Eras interface {
	Era() uint64
}

// Reason says which limit refused an acquisition.
type Reason int

// The reasons a LimitError gives.
const (
	// ReasonConcurrency: every concurrency slot is held.
	ReasonConcurrency Reason = iota + 1
	// ReasonRate: a rate window is full.
	ReasonRate
	// ReasonCooldown: the key is cooling down.
	ReasonCooldown
)

// ReasonReserve: a rate window would admit the acquisition but for its
// reserve: after Redis lost the window's state (restarted empty, say), what
// the fleet may have taken that no process could write back counts as
// taken until the window has slid past the loss. Only the Redis backend
// gives it. (Its value leaves room for the backends' own answers.)
const ReasonReserve Reason = 7

// ReasonUnavailable: the backend's store (Redis) has not answered for a
// while. It refuses nothing (that is ErrUnavailable); it says why a Stall
// waits.
const ReasonUnavailable Reason = 9

// Timed reports whether a refusal for r ends at a known time: a window
// opening, a reserve ending, or a cooldown ending.
func (r Reason) Timed() bool { return r == ReasonRate || r == ReasonReserve || r == ReasonCooldown }

// String names the reason.
func (r Reason) String() string {
	switch r {
	case ReasonConcurrency:
		return "concurrency"
	case ReasonRate:
		return "rate"
	case ReasonCooldown:
		return "cooldown"
	case ReasonReserve:
		return "reserve"
	case ReasonUnavailable:
		return "unavailable"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

var (
	// ErrLimited matches every *LimitError with errors.Is.
	ErrLimited = errors.New("throttle: limited")
	// ErrInvalidRequest matches the errors of malformed requests.
	ErrInvalidRequest = errors.New("throttle: invalid request")
	// ErrLeaseNotHeld is returned by Release and Extend for a lease that has
	// expired or was already released.
	ErrLeaseNotHeld = errors.New("throttle: lease not held")
	// ErrUnavailable matches the errors of a backend that cannot reach its
	// store (Redis) and has no fallback (on Redis, for Acquire and Extend,
	// once they have waited for it to answer again): nothing was acquired,
	// and no call should start.
	ErrUnavailable = errors.New("throttle: backend unavailable")
)

// LimitError is a refusal. It matches ErrLimited.
type LimitError struct {
	Key    string
	Reason Reason
	// RetryAfter is how long until the refusing limit frees up, when known: the
	// end of a cooldown or the next opening of a rate window. It is zero for
	// ReasonConcurrency, which frees up when some holder releases. For a
	// request with Members, it is when every member has room.
	RetryAfter time.Duration
	// Members are, for a request with Members refused by a rate window,
	// the members without room, in the request's order.
	Members []string
}

// Error describes the refusal.
func (e *LimitError) Error() string {
	who := fmt.Sprintf("%q", e.Key)
	if len(e.Members) > 0 {
		who = fmt.Sprintf("%q (members %s)", e.Key, strings.Join(e.Members[:min(len(e.Members), 10)], ", "))
		if len(e.Members) > 10 {
			who = fmt.Sprintf("%s and %d more)", strings.TrimSuffix(who, ")"), len(e.Members)-10)
		}
	}
	if e.RetryAfter > 0 {
		return fmt.Sprintf("throttle: %s limited by %s, retry after %s", who, e.Reason, e.RetryAfter)
	}
	return fmt.Sprintf("throttle: %s limited by %s", who, e.Reason)
}

// Is makes errors.Is(err, ErrLimited) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimited }

// invalidf returns an error matching ErrInvalidRequest.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
}

// getOrMake returns m[k], made with mk and stored there if missing.
func getOrMake[K comparable, V any](m map[K]*V, k K, mk func() *V) *V {
	v := m[k]
	if v == nil {
		v = mk()
		m[k] = v
	}
	return v
}
