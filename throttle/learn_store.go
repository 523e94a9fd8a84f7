package throttle

import (
	"context"
	_ "embed"
	"strconv"
	"time"
)

//go:embed lua/swap_limit.lua
var swapLimitLua string

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
	if r.Concurrency == 0 {
		return r
	}
	b.learnedMu.Lock()
	defer b.learnedMu.Unlock()
	if n, ok := b.learned[r.Key]; ok && r.Concurrency > n {
		r.Concurrency = n
	}
	return r
}

// remember records the limit learned on key (0: none) for capped.
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
func (m *Memory) LoadLimit(_ context.Context, key string) (Learned, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.learned[key]
	return l, ok, nil
}

// SwapLimit implements LimitStore.
func (m *Memory) SwapLimit(_ context.Context, key string, prev, next Learned) (bool, error) {
	if err := validLearned(key, next); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.learned[key]; cur.Limit != prev.Limit || !cur.Since.Equal(prev.Since) {
		return false, nil
	}
	if next.Limit == 0 {
		delete(m.learned, key)
	} else {
		m.learned[key] = Learned{Limit: next.Limit, Since: next.Since.Truncate(time.Millisecond)}
	}
	return true, nil
}

// LoadLimit implements LimitStore. While Redis is down it fails at once
// with ErrUnavailable.
func (b *Redis) LoadLimit(ctx context.Context, key string) (Learned, bool, error) {
	if err := b.learnedReady(ctx, key); err != nil {
		return Learned{}, false, err
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	v, err := b.rdb.HMGet(octx, b.names(key, nil).learned, "limit", "since").Result()
	if err != nil {
		_, err = b.failed("load limit", err)
		return Learned{}, false, err
	}
	limit, _ := v[0].(string)
	since, _ := v[1].(string)
	n, err1 := strconv.Atoi(limit)
	ms, err2 := strconv.ParseInt(since, 10, 64)
	if limit == "" || err1 != nil || err2 != nil || n <= 0 {
		b.remember(key, 0)
		return Learned{}, false, nil // none, or not ours: the configured limit holds
	}
	b.remember(key, n)
	return Learned{Limit: n, Since: time.UnixMilli(ms)}, true, nil
}

// SwapLimit implements LimitStore. While Redis is down it fails at once
// with ErrUnavailable.
func (b *Redis) SwapLimit(ctx context.Context, key string, prev, next Learned) (bool, error) {
	if err := validLearned(key, next); err != nil {
		return false, err
	}
	if err := b.learnedReady(ctx, key); err != nil {
		return false, err
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	ms := func(l Learned) int64 {
		if l.Limit == 0 {
			return 0
		}
		return l.Since.UnixMilli()
	}
	n, err := b.swapLimit.Run(octx, b.rdb, []string{b.names(key, nil).learned},
		prev.Limit, ms(prev), next.Limit, ms(next), learnedKeep.Milliseconds()).Int()
	if err != nil {
		_, err = b.failed("swap limit", err)
		return false, err
	}
	if n == 1 {
		b.remember(key, next.Limit)
	}
	return n == 1, nil
}

// learnedReady fails at once while Redis is down, as every operation does.
func (b *Redis) learnedReady(ctx context.Context, key string) error {
	if key == "" {
		return invalidf("empty key")
	}
	down, err := b.ready(ctx)
	switch {
	case err != nil:
		return err
	case down:
		return b.errDown()
	}
	return nil
}

func validLearned(key string, l Learned) error {
	switch {
	case key == "":
		return invalidf("empty key")
	case l.Limit < 0:
		return invalidf("key %q: negative learned limit %d", key, l.Limit)
	}
	return nil
}

var (
	_ LimitStore = (*Memory)(nil)
	_ LimitStore = (*Redis)(nil)
)
