// What the steps do with leases the limiter granted: renew them, give
// them back, or hold them while WeCom may still be working.

package wecom

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wecomkit/wecom/catalog"
	"github.com/wecomkit/wecom/throttle"
)

// acquire takes the requests of cl in order, under the limit learned for
// its API (changes: those to report), giving back those taken if one
// fails. An earlier lease's TTL runs while the call waits for a later one,
// so after a long wait the earlier ones are renewed; lost reports one that
// expired meanwhile (another call may hold its slot now): nothing is held
// then. The leases are renewed from then on, until the attempt settles
// them, however long the credential and the answer take.
func (p *pipeline) acquire(ctx context.Context, cl *call, reqs []leaseRequest) (h held, changes []LimitChange, lost bool, err error) {
	slot, changes := p.learnedLimit(ctx, cl, reqs)
	reqs = together(reqs)
	leases := make([]throttle.Lease, 0, len(reqs))
	var firstAt time.Time
	began := p.era()
	for _, r := range reqs {
		var l throttle.Lease
		if r.calendar != 0 || (cl.tryMembers && len(r.Members) > 0) {
			l, err = p.cfg.limiter.TryAcquire(ctx, r.Request)
		} else {
			l, err = p.cfg.limiter.Acquire(ctx, r.Request)
		}
		if err != nil {
			p.release(ctx, leases)
			return held{}, changes, false, p.asNamed(p.limitError(cl.path, r.calendar, err), cl.members)
		}
		if len(leases) == 0 {
			firstAt = time.Now()
		}
		leases = append(leases, l)
	}
	if len(leases) > 1 && time.Since(firstAt) >= p.cfg.leaseTTL/4 {
		lost, err := p.renew(ctx, leases[:len(leases)-1])
		if err != nil || lost {
			p.release(ctx, leases)
			if err != nil {
				err = p.limitError(cl.path, 0, err)
			}
			return held{}, changes, lost, err
		}
	}
	return held{leases: leases, slot: p.granted(cl, slot, leases), stop: p.keepAlive(ctx, leases), era: began}, changes, false, nil
}

// era is the limiter's era (throttle.Eras), or 0 for one that never loses
// its state.
func (p *pipeline) era() uint64 {
	if e, ok := p.cfg.limiter.(throttle.Eras); ok {
		return e.Era()
	}
	return 0
}

// renew renews the slots of leases: those taken before a long wait for
// another, or all of a call's when the limiter may have lost its state
// since it asked for them (exchange). lost reports one that expired or was
// forgotten meanwhile: the call starts over. A lease that holds no slot (a
// window count, a calendar count) has nothing to renew.
func (p *pipeline) renew(ctx context.Context, leases []throttle.Lease) (lost bool, err error) {
	for i := range leases {
		if !leases[i].HoldsSlot() {
			continue
		}
		l, err := p.cfg.limiter.Extend(ctx, leases[i], p.cfg.leaseTTL)
		if errors.Is(err, throttle.ErrLeaseNotHeld) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		leases[i] = l
	}
	return false, nil
}

// keepAlive renews the leases' slots every half TTL until the returned stop
// is called, so that a call slower than the TTL keeps them. It starts no
// goroutine until the first renewal is due, and none outlives stop; stop
// cuts a renewal short that waits for the limiter (its Redis down), so that
// the call's end does not wait for it.
func (p *pipeline) keepAlive(ctx context.Context, leases []throttle.Lease) (stop func()) {
	var (
		mu      sync.Mutex
		stopped bool
		running sync.WaitGroup
		t       *time.Timer
		halt    context.Context // made by the first renewal: a call that ends first allocates none
		halted  context.CancelFunc
	)
	ttl := p.cfg.leaseTTL
	renew := func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		if halt == nil {
			halt, halted = context.WithCancel(context.WithoutCancel(ctx))
		}
		running.Add(1)
		mu.Unlock()
		defer running.Done()
		rctx, cancel := context.WithTimeout(halt, ttl/2)
		defer cancel()
		for _, l := range leases {
			if !l.HoldsSlot() {
				continue
			}
			if _, err := p.cfg.limiter.Extend(rctx, l, ttl); err != nil && halt.Err() == nil {
				p.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: lease renewal failed", slog.String("key", l.Key), slog.String("error", err.Error()))
			}
		}
		mu.Lock()
		if !stopped {
			t.Reset(ttl / 2)
		}
		mu.Unlock()
	}
	mu.Lock()
	t = time.AfterFunc(ttl/2, renew)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		if halted != nil {
			halted()
		}
		mu.Unlock()
		running.Wait()
	}
}

// release gives leases back, even when ctx is already cancelled.
func (p *pipeline) release(ctx context.Context, leases []throttle.Lease) {
	if len(leases) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for i := len(leases) - 1; i >= 0; i-- {
		if err := p.cfg.limiter.Release(rctx, leases[i]); err != nil {
			p.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: lease release failed", slog.String("key", leases[i].Key), slog.String("error", err.Error()))
		}
	}
}

// hold keeps the slots of a call that may still be running at WeCom: each
// is pushed to end holdFor from now and then left alone, neither released
// nor renewed. It reports whether the call held any slot.
func (p *pipeline) hold(ctx context.Context, path string, leases []throttle.Lease) bool {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	held := false
	for _, l := range leases {
		if !l.HoldsSlot() {
			continue
		}
		held = true
		if _, err := p.cfg.limiter.Extend(rctx, l, p.cfg.holdFor()); err != nil {
			p.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: could not extend the hold of an abandoned call", slog.String("key", l.Key), slog.String("error", err.Error()))
		}
	}
	if held {
		p.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "wecom: no answer to a call that was sent: its slots stay taken until the hold ends",
			slog.String("path", path), slog.Duration("hold", p.cfg.holdFor()))
	}
	return held
}

// granted returns the cap the API's slot was granted under, which may be
// lower than the learned limit asked for: the backend caps every acquisition by the
// limit learned on its key when it keeps learned limits.
func (p *pipeline) granted(cl *call, slot apiSlot, leases []throttle.Lease) apiSlot {
	if slot.limit == 0 {
		return slot
	}
	key := p.apiKey(cl.path)
	for _, l := range leases {
		if l.Key == key && l.Concurrency > 0 {
			slot.limit = l.Concurrency
		}
	}
	return slot
}

// asNamed rewrites the members a *RateLimitError in err names, which the
// limiter counts by memberKey, as the call named them.
func (p *pipeline) asNamed(err error, members []string) error {
	var rl *RateLimitError
	if !errors.As(err, &rl) || len(rl.Members) == 0 {
		return err
	}
	named := make(map[string]string, len(members))
	for _, m := range members {
		if k := p.memberKey(m); named[k] == "" {
			named[k] = m
		}
	}
	for i, k := range rl.Members {
		if m := named[k]; m != "" {
			rl.Members[i] = m
		}
	}
	return err
}

// limitError turns a limiter refusal into the client's error. A refusal of
// a calendar key (calendar: its period, 0 for another key) lasts until the
// next day or month starts in China Standard Time.
func (p *pipeline) limitError(path string, calendar catalog.Period, err error) error {
	var le *throttle.LimitError
	if errors.As(err, &le) {
		rl := &RateLimitError{Path: path, RetryAfter: le.RetryAfter, Err: le, Members: le.Members}
		if calendar != 0 && (le.Reason == throttle.ReasonRate || le.Reason == throttle.ReasonReserve) {
			now := p.cfg.now()
			rl.RetryAfter, rl.calendar = calendar.Next(now).Sub(now), calendar
		}
		return rl
	}
	return fmt.Errorf("wecom: %s: waiting for the limiter: %w", path, err)
}

// held is what an attempt holds until it is settled: its leases, the cap
// its API's slot was granted under, and the stop of their renewal (nil
// when none were taken).
type held struct {
	leases []throttle.Lease
	slot   apiSlot
	stop   func()
	era    uint64 // the limiter's era before the first lease was asked for
}

// apiSlot is the calls-in-flight cap of its API an attempt asks or was
// granted under (learned, at most the configured one); zero: none.
type apiSlot struct{ limit, configured int }

// learnedLimit lowers the calls-in-flight cap of the call's API in reqs
// to the limit learned for it, and returns what it asks under and the
// changes to report.
func (p *pipeline) learnedLimit(ctx context.Context, cl *call, reqs []leaseRequest) (slot apiSlot, changes []LimitChange) {
	key := p.apiKey(cl.path)
	for i := range reqs {
		if reqs[i].Key != key || reqs[i].Concurrency == 0 {
			continue
		}
		limit, ch := p.learner.Limit(ctx, key, reqs[i].Concurrency)
		slot = apiSlot{limit: limit, configured: reqs[i].Concurrency}
		reqs[i].Concurrency = limit
		if ch != nil {
			lc := limitChange(cl.path, slot.configured, ch)
			p.cfg.logger.LogAttrs(ctx, slog.LevelInfo, logMessage, lc.attrs()...)
			changes = append(changes, lc)
		}
	}
	return slot, changes
}
