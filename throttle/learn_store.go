package throttle

import (
	"context"
	"errors"
	"time"
)

// learnedKeep is how long Redis keeps a learned limit nobody changes: a
// fleet that stopped for longer starts again from the configured limits.
const learnedKeep = 24 * time.Hour

// capped returns r with its concurrency capped by the limit learned on its
// key, if that is lower. m.mu is held.
func (m *Memory) capped(r Request) Request {
	if l, ok := m.learned[r.Key]; ok && r.Concurrency > l.Limit {
		r.Concurrency = l.Limit
	}
	return r
}

// capped returns r with its concurrency capped by the limit learned on its
// key as this process last read or wrote it, if that is lower.
func (b *Redis) capped(r Request) Request {
	b.learnedMu.Lock()
	defer b.learnedMu.Unlock()
	if n, ok := b.learned[r.Key]; ok && r.Concurrency > n {
		r.Concurrency = n
	}
	return r
}

// remember records the limit learned on key (0 or less: none) for capped.
func (b *Redis) remember(key string, limit int) {
	b.learnedMu.Lock()
	defer b.learnedMu.Unlock()
	if limit > 0 {
		b.learned[key] = limit
	} else {
		delete(b.learned, key)
	}
}

// LoadLimit implements LimitStore.
func (m *Memory) LoadLimit(_ context.Context, key string) (Learned, time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.learned[key]
	return l, time.Now(), ok, nil
}

// SwapLimit implements LimitStore.
func (m *Memory) SwapLimit(_ context.Context, key string, prev Learned, next int) (Learned, bool, error) {
	if err := validLearned(key, next); err != nil {
		return Learned{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.learned[key]; cur.Limit != prev.Limit || !cur.Since.Equal(prev.Since) {
		return Learned{}, false, nil
	}
	if next == 0 {
		delete(m.learned, key)
		return Learned{}, true, nil
	}
	l := Learned{Limit: next, Since: time.UnixMilli(time.Now().UnixMilli())}
	m.learned[key] = l
	return l, true, nil
}

// LoadLimit implements LimitStore, on the Redis server's clock. While Redis
// is down it fails at once with ErrUnavailable: a Learner then keeps the
// limit this process last knew, and the call goes on without waiting.
func (b *Redis) LoadLimit(ctx context.Context, key string) (Learned, time.Time, bool, error) {
	v, err := b.runLearned(ctx, "load limit", b.loadLimit, key, 3)
	if err != nil {
		return Learned{}, time.Time{}, false, err
	}
	b.remember(key, int(v[0]))
	if v[0] <= 0 { // none, or not ours: the configured limit holds
		return Learned{}, time.UnixMilli(v[2]), false, nil
	}
	return Learned{Limit: int(v[0]), Since: time.UnixMilli(v[1])}, time.UnixMilli(v[2]), true, nil
}

// SwapLimit implements LimitStore, stamping the change with the Redis
// server's clock. While Redis is down it fails at once with ErrUnavailable.
func (b *Redis) SwapLimit(ctx context.Context, key string, prev Learned, next int) (Learned, bool, error) {
	if err := validLearned(key, next); err != nil {
		return Learned{}, false, err
	}
	v, err := b.runLearned(ctx, "swap limit", b.swapLimit, key, 1, prev.Limit, prev.Since.UnixMilli(), next, learnedKeep.Milliseconds())
	if err != nil || v[0] != 1 || len(v) < 2 {
		return Learned{}, false, err
	}
	b.remember(key, next)
	if next == 0 {
		return Learned{}, true, nil
	}
	return Learned{Limit: next, Since: time.UnixMilli(v[1])}, true, nil
}

// runLearned runs s on key's learned limit, failing at once while Redis is
// down, as every operation does; a reply of fewer than n integers is
// malformed.
func (b *Redis) runLearned(ctx context.Context, op string, s *script, key string, n int, args ...any) ([]int64, error) {
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

func validLearned(key string, next int) error {
	switch {
	case key == "":
		return invalidf("empty key")
	case next < 0:
		return invalidf("key %q: negative learned limit %d", key, next)
	}
	return nil
}

var (
	_ LimitStore = (*Memory)(nil)
	_ LimitStore = (*Redis)(nil)
)
