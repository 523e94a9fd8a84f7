package throttle

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"
)

var (
	//go:embed lua/swap_limit.lua
	swapLimitLua string
	//go:embed lua/load_limit.lua
	loadLimitLua string
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
// is down it fails at once with ErrUnavailable.
func (b *Redis) LoadLimit(ctx context.Context, key string) (Learned, time.Time, bool, error) {
	if err := b.learnedReady(ctx, key); err != nil {
		return Learned{}, time.Time{}, false, err
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	v, err := replyStrings(b.loadLimit.run(octx, b.rdb, []string{b.names(key, nil).learned}))
	if err != nil || len(v) != 3 {
		_, err = b.failed("load limit", cmp.Or(err, errors.New("malformed answer")))
		return Learned{}, time.Time{}, false, err
	}
	now, err := strconv.ParseInt(v[2], 10, 64)
	if err != nil {
		return Learned{}, time.Time{}, false, fmt.Errorf("throttle: load limit: server time %q", v[2])
	}
	n, err1 := strconv.Atoi(v[0])
	ms, err2 := strconv.ParseInt(v[1], 10, 64)
	if err1 != nil || err2 != nil || n <= 0 {
		b.remember(key, 0)
		return Learned{}, time.UnixMilli(now), false, nil // none, or not ours: the configured limit holds
	}
	b.remember(key, n)
	return Learned{Limit: n, Since: time.UnixMilli(ms)}, time.UnixMilli(now), true, nil
}

// SwapLimit implements LimitStore, stamping the change with the Redis
// server's clock. While Redis is down it fails at once with ErrUnavailable.
func (b *Redis) SwapLimit(ctx context.Context, key string, prev Learned, next int) (Learned, bool, error) {
	if err := validLearned(key, next); err != nil {
		return Learned{}, false, err
	}
	if err := b.learnedReady(ctx, key); err != nil {
		return Learned{}, false, err
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	since := int64(0)
	if prev.Limit > 0 {
		since = prev.Since.UnixMilli()
	}
	v, err := replyInt64s(b.swapLimit.run(octx, b.rdb, []string{b.names(key, nil).learned},
		prev.Limit, since, next, learnedKeep.Milliseconds()))
	if err != nil || len(v) == 0 {
		_, err = b.failed("swap limit", cmp.Or(err, errors.New("malformed answer")))
		return Learned{}, false, err
	}
	if v[0] != 1 || len(v) < 2 {
		return Learned{}, false, nil
	}
	b.remember(key, next)
	if next == 0 {
		return Learned{}, true, nil
	}
	return Learned{Limit: next, Since: time.UnixMilli(v[1])}, true, nil
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
