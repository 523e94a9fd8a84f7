// The Redis backend as a LimitStore: learned limits kept in Redis, timed
// by the server's clock.

package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// learnedKeep is how long Redis keeps a learned limit nobody changes: a
// fleet that stopped for longer starts again from the configured limits.
const learnedKeep = 24 * time.Hour

// capped returns r with its concurrency capped by the limit learned on its
// key as this process last read or wrote it, if that is lower.
func (b *Backend) capped(r throttle.Request) throttle.Request {
	b.learnedMu.Lock()
	defer b.learnedMu.Unlock()
	if n, ok := b.learned[r.Key]; ok && r.Concurrency > n {
		r.Concurrency = n
	}
	return r
}

// remember records the limit learned on key (0 or less: none) for capped.
func (b *Backend) remember(key string, limit int) {
	b.learnedMu.Lock()
	defer b.learnedMu.Unlock()
	if limit > 0 {
		b.learned[key] = limit
	} else {
		delete(b.learned, key)
	}
}

// LoadLimit implements LimitStore, on the Redis server's clock. While Redis
// is down it fails at once with ErrUnavailable: a Learner then keeps the
// limit this process last knew, and the call goes on without waiting.
func (b *Backend) LoadLimit(ctx context.Context, key string) (throttle.Learned, time.Time, bool, error) {
	f, err := b.runLearned(ctx, "load limit", b.loadLimit, key, []string{"limit", "since", "now"})
	if err != nil {
		return throttle.Learned{}, time.Time{}, false, err
	}
	b.remember(key, int(f["limit"]))
	if f["limit"] <= 0 { // none, or not ours: the configured limit holds
		return throttle.Learned{}, time.UnixMilli(f["now"]), false, nil
	}
	return throttle.Learned{Limit: int(f["limit"]), Since: time.UnixMilli(f["since"])}, time.UnixMilli(f["now"]), true, nil
}

// SwapLimit implements LimitStore, stamping the change with the Redis
// server's clock. While Redis is down it fails at once with ErrUnavailable.
func (b *Backend) SwapLimit(ctx context.Context, key string, prev throttle.Learned, next int) (throttle.Learned, bool, error) {
	switch {
	case key == "":
		return throttle.Learned{}, false, invalidf("empty key")
	case next < 0:
		return throttle.Learned{}, false, invalidf("key %q: negative learned limit %d", key, next)
	}
	f, err := b.runLearned(ctx, "swap limit", b.swapLimit, key, []string{"stored"}, prev.Limit, prev.Since.UnixMilli(), next, learnedKeep.Milliseconds())
	if _, answered := f["now"]; err != nil || f["stored"] != 1 || !answered {
		return throttle.Learned{}, false, err
	}
	b.remember(key, next)
	if next == 0 {
		return throttle.Learned{}, true, nil
	}
	return throttle.Learned{Limit: next, Since: time.UnixMilli(f["now"])}, true, nil
}

// runLearned runs s on key's learned limit, failing at once while Redis is
// down, as every operation does, and returns its keyed answer (see
// replyFields), which must name every field of want.
func (b *Backend) runLearned(ctx context.Context, op string, s *script, key string, want []string, args ...any) (map[string]int64, error) {
	if key == "" {
		return nil, invalidf("empty key")
	}
	if down, err := b.ready(ctx); err != nil {
		return nil, err
	} else if down {
		return nil, b.errDown()
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	f, err := replyFields(s.run(octx, b.rdb, []string{b.names(key, nil).learned}, args...))
	for _, name := range want {
		if _, ok := f[name]; err == nil && !ok {
			err = fmt.Errorf("malformed answer %v: no %s", f, name)
		}
	}
	if err != nil {
		_, err = b.failed(op, err)
	}
	return f, err
}

// CapsByStoredLimit implements throttle.StoreCapped: the acquire script
// caps a key's concurrency by the limit stored for it.
func (*Backend) CapsByStoredLimit() {}

var _ throttle.StoreCapped = (*Backend)(nil)
