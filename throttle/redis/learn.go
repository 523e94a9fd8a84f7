// The Redis backend as a LimitStore: learned limits kept in Redis, timed
// by the server's clock.

package redis

import (
	"context"
	"errors"
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
// is down it fails at once with ErrUnavailable.
func (b *Backend) LoadLimit(ctx context.Context, key string) (throttle.Learned, time.Time, bool, error) {
	v, err := b.runLearned(ctx, "load limit", b.loadLimit, key, 3)
	if err != nil {
		return throttle.Learned{}, time.Time{}, false, err
	}
	b.remember(key, int(v[0]))
	if v[0] <= 0 { // none, or not ours: the configured limit holds
		return throttle.Learned{}, time.UnixMilli(v[2]), false, nil
	}
	return throttle.Learned{Limit: int(v[0]), Since: time.UnixMilli(v[1])}, time.UnixMilli(v[2]), true, nil
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
	v, err := b.runLearned(ctx, "swap limit", b.swapLimit, key, 1, prev.Limit, prev.Since.UnixMilli(), next, learnedKeep.Milliseconds())
	if err != nil || v[0] != 1 || len(v) < 2 {
		return throttle.Learned{}, false, err
	}
	b.remember(key, next)
	if next == 0 {
		return throttle.Learned{}, true, nil
	}
	return throttle.Learned{Limit: next, Since: time.UnixMilli(v[1])}, true, nil
}

// runLearned runs s on key's learned limit, failing at once while Redis is
// down, as every operation does; a reply of fewer than n integers is
// malformed.
func (b *Backend) runLearned(ctx context.Context, op string, s *script, key string, n int, args ...any) ([]int64, error) {
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
	v, err := replyInt64s(s.run(octx, b.rdb, []string{b.names(key, nil).learned}, args...))
	if err == nil && len(v) < n {
		err = errors.New("malformed answer")
	}
	if err != nil {
		_, err = b.failed(op, err)
	}
	return v, err
}

var _ throttle.LimitStore = (*Backend)(nil)
