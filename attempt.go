// What an Observer is told of every attempt.

package wecom

import (
	"context"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// Attempt describes one attempt of a call, for an Observer.
type Attempt struct {
	Method string
	Path   string
	// Number is 1 for the first attempt of a call, 2 for its first retry, ...
	Number int
	// ErrCode is WeCom's errcode (0 on success and when there was no answer).
	ErrCode int
	// Err is the attempt's error, nil on success. It never holds a token.
	Err error
	// Duration is the time from sending the request to its answer.
	Duration time.Duration
	// LeaseWait is the time spent waiting for the limiter before sending.
	LeaseWait time.Duration
	// Detached: the caller had given up (its context ended) before the
	// answer; the attempt went on without it, and its leases went back when
	// the answer came.
	Detached bool
	// Abandoned: the request was sent and no answer came (the attempt
	// timeout fired, or the connection broke). The call may still be running
	// at WeCom, so its concurrency slots were neither released nor renewed:
	// they stay taken for the abandoned hold (WithAbandonedHold), capacity
	// the other calls lose meanwhile.
	Abandoned bool
	// LimitChanges are the changes of the calls-in-flight limit of the API
	// learned from WeCom (see WithAdaptiveLimits) that this attempt noticed:
	// before it was sent, and from its 45033, in order.
	LimitChanges []LimitChange
	// Uncounted names the recipients of the call that no limit counted:
	// "@all", "toparty" or "totag" of an app message, whose members WeCom
	// finds itself. The per-member windows hold only for the members the
	// call named, and WeCom drops silently what goes over them.
	Uncounted []string
}

// Observer is called after every attempt of every call, gettoken included, in
// the calling goroutine, or, for an attempt that outlived its caller
// (Attempt.Detached), in the goroutine that finished it. It must be safe for
// concurrent use. If it panics, the call's leases are still released; the
// panic reaches the caller, or is logged when the caller has gone.
type Observer func(ctx context.Context, a Attempt)

// StallObserver hears when a call is about to wait more than
// throttle.StallAfter (a second) for its limits for a reason other than busy
// slots: a full rate window, a reserve the limiter's Redis holds after it
// lost its state, a cooldown after a 45009, a daily count spent until
// midnight CST, or the limiter's Redis not answering for a second. s says
// which limit (s.Key), why (s.Reason) and until when (s.Until, zero when
// not known). It is called before the wait, or during it for a Redis that
// does not answer; it must be safe for concurrent use and return quickly.
type StallObserver func(ctx context.Context, path string, s throttle.Stall)

// LimitChange is a change of the calls-in-flight limit the client applies
// to an API, learned from WeCom (see WithAdaptiveLimits).
type LimitChange struct {
	// Path is the API's path.
	Path string
	// From and To are the limits before and after.
	From, To int
	// Configured is the limit the client was configured with: the learned
	// one never exceeds it.
	Configured int
	// Refused: WeCom answered 45033 to a call granted under From slots.
	// Otherwise the limit rose after a quiet period, or another client
	// sharing the limiter backend changed it.
	Refused bool
}
