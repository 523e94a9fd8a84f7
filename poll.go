package wecom

import (
	"context"
	"time"
)

// PollPolicy is how a job's Wait polls for its result: first after
// Interval, then after twice as long each time, up to MaxInterval.
type PollPolicy struct {
	// Interval is the first wait (default DefaultPollInterval).
	Interval time.Duration
	// MaxInterval caps the waits (default DefaultMaxPollInterval, or
	// Interval when longer). Where a callback can end a wait, long waits
	// leave it to the callback and keep polls as a fallback.
	MaxInterval time.Duration
}

// The defaults of PollPolicy.
const (
	DefaultPollInterval    = time.Second
	DefaultMaxPollInterval = 30 * time.Second
)

// poll asks until ask reports the job done or fails, and returns ask's
// error or ctx's. It waits before each ask but the first when askFirst.
// Every wait is a select on a timer, ctx, and wake (nil: none), which ends
// the wait it comes in, or the first when it came before, and no more:
// the asks go on at their pace after it.
func (p PollPolicy) poll(ctx context.Context, askFirst bool, wake <-chan struct{}, ask func() (done bool, err error)) error {
	if p.Interval <= 0 {
		p.Interval = DefaultPollInterval
	}
	if p.MaxInterval <= 0 {
		p.MaxInterval = max(DefaultMaxPollInterval, p.Interval)
	}
	delay := min(p.Interval, p.MaxInterval)
	for skip := askFirst; ; skip = false {
		if !skip {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-wake:
				wake = nil
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
			t.Stop()
			delay = min(2*delay, p.MaxInterval)
		}
		if done, err := ask(); done || err != nil {
			return err
		}
	}
}
