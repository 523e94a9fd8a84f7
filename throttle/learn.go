package throttle

import (
	"context"
	"math"
	"sync"
	"time"
)

// Learned is a concurrency limit learned from an upstream's refusals for one
// key: lower than the one configured, because the upstream refused calls
// under it (another system shares the budget, or the upstream lowered it).
type Learned struct {
	// Limit is the concurrency in force, at least 1.
	Limit int
	// Since is when it was last changed, by the clock of the process that
	// changed it, to the millisecond.
	Since time.Time
}

// LimitStore keeps learned limits where every process sharing a backend
// sees them. Memory and Redis implement it.
type LimitStore interface {
	// LoadLimit returns the limit learned on key; ok is false when none is
	// (the configured limit is in force).
	LoadLimit(ctx context.Context, key string) (l Learned, ok bool, err error)
	// SwapLimit stores next on key if what is stored is prev (the zero
	// Learned: nothing), and reports whether it did. The zero next removes
	// the learned limit.
	SwapLimit(ctx context.Context, key string, prev, next Learned) (bool, error)
}

// AIMD says how a Learner adapts a limit: additive increase, multiplicative
// decrease, as TCP adapts its window. The zero value means the defaults.
type AIMD struct {
	// Backoff multiplies the limit a refused call was granted under
	// (default 0.9, as Netflix's concurrency-limits library); the limit
	// drops by at least one, and never below 1.
	Backoff float64
	// Quiet is how long a lowered limit must go without a refusal before it
	// rises by one (default one minute), up to the configured limit.
	Quiet time.Duration
}

func (a AIMD) withDefaults() AIMD {
	if a.Backoff <= 0 || a.Backoff >= 1 {
		a.Backoff = 0.9
	}
	if a.Quiet <= 0 {
		a.Quiet = time.Minute
	}
	return a
}

// lower returns the limit after the upstream refused a call granted under
// under, when the limit in force (cur, or configured when none is learned)
// is not already lower than that.
func (a AIMD) lower(cur Learned, configured, under int, now time.Time) (Learned, bool) {
	limit := configured
	if cur.Limit > 0 {
		limit = cur.Limit
	}
	next := max(1, min(under-1, int(math.Floor(float64(under)*a.Backoff))))
	if next >= limit {
		return cur, false // lowered already, by this refusal's like
	}
	return Learned{Limit: next, Since: now.Truncate(time.Millisecond)}, true
}

// raise returns the limit one quiet period after its last change: one more,
// or nothing learned (the zero Learned) once that reaches configured.
func (a AIMD) raise(cur Learned, configured int, now time.Time) (Learned, bool) {
	if cur.Limit == 0 || now.Sub(cur.Since) < a.Quiet {
		return cur, false
	}
	if cur.Limit+1 >= configured {
		return Learned{}, true
	}
	return Learned{Limit: cur.Limit + 1, Since: now.Truncate(time.Millisecond)}, true
}

// Change is a change of a key's concurrency that a Learner made or saw.
type Change struct {
	Key      string
	From, To int
	// Refused: the Learner lowered the limit after a refusal; otherwise it
	// rose after a quiet period, or another process changed it.
	Refused bool
}

// Learner adapts the concurrency of keys to what an upstream accepts, and
// shares what it learns through a LimitStore: a refusal of a call granted
// under n slots lowers the key's limit below n for every process, and each
// quiet period without one raises it by one, never above the configured
// limit (AIMD). It reads the store at most once per refresh period per key,
// so it costs a round trip a second or so, not one per call. It is safe for
// concurrent use.
type Learner struct {
	store   LimitStore
	aimd    AIMD
	refresh time.Duration
	now     func() time.Time

	mu   sync.Mutex
	keys map[string]*learnedKey
}

type learnedKey struct {
	cur     Learned // zero: none learned
	read    time.Time
	reading bool
	told    int // the limit last reported; 0 before the first
}

// NewLearner returns a Learner keeping its limits in store, reading them
// again every refresh (default one second).
func NewLearner(store LimitStore, a AIMD, refresh time.Duration) *Learner {
	if refresh <= 0 {
		refresh = time.Second
	}
	return &Learner{store: store, aimd: a.withDefaults(), refresh: refresh, now: time.Now, keys: make(map[string]*learnedKey)}
}

// Limit returns the concurrency in force on key, configured at most, and
// the change from what it last returned for key, if any. When the store
// cannot be read it goes on with what it knew.
func (l *Learner) Limit(ctx context.Context, key string, configured int) (int, *Change) {
	now := l.now()
	l.mu.Lock()
	k := l.key(key, configured)
	due := !k.reading && now.Sub(k.read) >= l.refresh
	if due {
		k.reading = true
	}
	l.mu.Unlock()
	if due {
		cur, ok, err := l.store.LoadLimit(ctx, key)
		if err == nil && !ok {
			cur = Learned{}
		}
		if next, raise := l.aimd.raise(cur, configured, now); err == nil && raise {
			if swapped, serr := l.store.SwapLimit(ctx, key, cur, next); serr == nil && swapped {
				cur = next
			}
		}
		l.mu.Lock()
		k.reading, k.read = false, now
		if err == nil {
			k.cur = cur
		}
		l.mu.Unlock()
	}
	return l.tell(key, configured)
}

// Refused lowers key's limit after the upstream refused a call granted
// under slots, for every process sharing the store, unless it is lower
// already. It returns the change, if any, and an error when the store could
// not be changed (the limit is then lowered in this process only).
func (l *Learner) Refused(ctx context.Context, key string, configured, under int) (*Change, error) {
	var err error
	for range 3 { // another process may change it meanwhile
		var cur Learned
		var ok bool
		if cur, ok, err = l.store.LoadLimit(ctx, key); err != nil {
			break
		}
		if !ok {
			cur = Learned{}
		}
		next, lower := l.aimd.lower(cur, configured, under, l.now())
		if !lower {
			l.set(key, configured, cur)
			break
		}
		var swapped bool
		if swapped, err = l.store.SwapLimit(ctx, key, cur, next); err != nil {
			break
		} else if swapped {
			l.set(key, configured, next)
			break
		}
	}
	if err != nil {
		l.mu.Lock()
		k := l.key(key, configured)
		if next, lower := l.aimd.lower(k.cur, configured, under, l.now()); lower {
			k.cur = next
		}
		l.mu.Unlock()
	}
	_, ch := l.tell(key, configured)
	if ch != nil {
		ch.Refused = true
	}
	return ch, err
}

// set records cur as read now.
func (l *Learner) set(key string, configured int, cur Learned) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.key(key, configured)
	k.cur, k.read = cur, l.now()
}

// tell returns the limit in force on key and its change since last told.
func (l *Learner) tell(key string, configured int) (int, *Change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.key(key, configured)
	limit := configured
	if k.cur.Limit > 0 {
		limit = min(k.cur.Limit, configured)
	}
	if limit == k.told {
		return limit, nil
	}
	ch := &Change{Key: key, From: k.told, To: limit}
	k.told = limit
	return limit, ch
}

// key returns key's state, making it (as told configured) if new. l.mu is
// held.
func (l *Learner) key(key string, configured int) *learnedKey {
	k := l.keys[key]
	if k == nil {
		k = &learnedKey{told: configured}
		l.keys[key] = k
	}
	return k
}
