package throttle

import (
	"context"
	"time"
)

// capped returns r with its concurrency capped by the limit learned on its
// key, if that is lower. m.mu is held.
func (m *Memory) capped(r Request) Request {
	if l, ok := m.learned[r.Key]; ok && r.Concurrency > l.Limit {
		r.Concurrency = l.Limit
	}
	return r
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

func validLearned(key string, next int) error {
	switch {
	case key == "":
		return invalidf("empty key")
	case next < 0:
		return invalidf("key %q: negative learned limit %d", key, next)
	}
	return nil
}

var _ LimitStore = (*Memory)(nil)
