// What the steps do with leases the limiter granted: renew them, give
// them back, or hold them while WeCom may still be working.

package wecom

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// renewEarlier renews the slots of every lease but the last after a long
// wait. lost reports one that expired meanwhile. A lease that holds no slot
// (a window count, a day count) has nothing to renew.
func (p *pipeline) renewEarlier(ctx context.Context, leases []throttle.Lease) (lost bool, err error) {
	for i := range leases[:len(leases)-1] {
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
// goroutine until the first renewal is due, and none outlives stop.
func (p *pipeline) keepAlive(ctx context.Context, leases []throttle.Lease) (stop func()) {
	var (
		mu      sync.Mutex
		stopped bool
		running sync.WaitGroup
		t       *time.Timer
	)
	ttl := p.cfg.leaseTTL
	renew := func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		running.Add(1)
		mu.Unlock()
		defer running.Done()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl/2)
		defer cancel()
		for _, l := range leases {
			if !l.HoldsSlot() {
				continue
			}
			if _, err := p.cfg.limiter.Extend(rctx, l, ttl); err != nil {
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
