package throttle

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"
)

// Learned is a concurrency limit learned from an upstream's refusals for one
// key: lower than the one configured, because the upstream refused calls
// under it (another system shares the budget, or the upstream lowered it).
type Learned struct {
	// Limit is the concurrency in force, at least 1.
	Limit int
	// Since is when it was last changed, by the store's clock (the Redis
	// server's, not a pod's), to the millisecond.
	Since time.Time
}

// in returns the limit x puts in force on a key configured so.
func (x Learned) in(configured int) int { return cmp.Or(x.Limit, configured) }

// LimitStore keeps learned limits where every process sharing a backend
// sees them, timed by the store's own clock. Memory and Redis implement it;
// both cap every acquisition on a key by the limit learned on it.
type LimitStore interface {
	// LoadLimit returns the limit learned on key (ok false when none is:
	// the configured limit is in force) and the store's clock now, which
	// Learned.Since is to be compared with.
	LoadLimit(ctx context.Context, key string) (l Learned, now time.Time, ok bool, err error)
	// SwapLimit stores the limit next on key, changed now by the store's
	// clock, if what is stored is prev (the zero Learned: nothing), and
	// returns what it stored and whether it did. next 0 removes the learned
	// limit.
	SwapLimit(ctx context.Context, key string, prev Learned, next int) (stored Learned, ok bool, err error)
}

// A StoreCapped LimitStore is the Backend the limits are learned for, and
// caps each acquisition on a key by the limit stored for it in the step
// that takes it (the Redis backend, for every process of a fleet): a
// Learner on it does not hold a key's first callers while it reads the key,
// as the store holds them to the fleet's limit meanwhile.
type StoreCapped interface {
	LimitStore
	CapsByStoredLimit()
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
// under, when the limit in force is not already lower than that.
func (a AIMD) lower(cur Learned, configured, under int) (int, bool) {
	next := max(1, min(under-1, int(float64(under)*a.Backoff)))
	if next >= cur.in(configured) {
		return 0, false // lowered already, by this refusal's like
	}
	return next, true
}

// raise returns the limit one quiet period after its last change, by the
// store's clock now: one more, or 0 (nothing learned) once that reaches
// configured.
func (a AIMD) raise(cur Learned, configured int, now time.Time) (int, bool) {
	if cur.Limit == 0 || now.Sub(cur.Since) < a.Quiet {
		return 0, false
	}
	if cur.Limit+1 >= configured {
		return 0, true
	}
	return cur.Limit + 1, true
}

// Change is a change of a key's concurrency that a Learner made or saw.
type Change struct {
	Key      string
	From, To int
	// Refused: the Learner lowered the limit after a refusal; otherwise it
	// rose after a quiet period, or another process changed it.
	Refused bool
}

// CappedRefresh is a Learner's default refresh period on a StoreCapped
// store. Such a store holds every acquisition to the stored limit itself,
// so a read only brings this process's own copy up to date (what it hands
// on without the store, what it tells its observer). At a provider's 200
// corps on Redis the reads of a one-second refresh were a tenth of the
// limiter's scripts (bench/providers.sh: 1.43-1.47 → 1.24-1.32 a mark).
const CappedRefresh = 5 * time.Second

// Learner adapts the concurrency of keys to what an upstream accepts (see
// AIMD), sharing what it learns through a LimitStore timed by the store's
// clock: a refusal lowers a key's limit for every process. It reads the
// store at most once per refresh period per key, not once per call. When
// the store fails, it goes on in this process alone. It is safe for
// concurrent use.
type Learner struct {
	store   LimitStore
	capped  bool // store is StoreCapped
	aimd    AIMD
	refresh time.Duration
	now     func() time.Time // this process's clock: refreshes, and raises while the store fails

	mu   sync.Mutex
	keys map[string]*learnedKey
}

type learnedKey struct {
	cur     Learned // zero: none learned
	read    time.Time
	done    chan struct{} // of the read under way (nil: none), closed when it ends
	told    int           // the limit last reported
	changed time.Time     // when cur last changed, by this process's clock
	// refusing: Refused calls under way; a read of the store made
	// meanwhile is not applied, so that their change is theirs to tell.
	refusing int
}

// NewLearner returns a Learner keeping its limits in store, reading them
// again every refresh (default one second; CappedRefresh on a StoreCapped
// store).
func NewLearner(store LimitStore, a AIMD, refresh time.Duration) *Learner {
	_, capped := store.(StoreCapped)
	if refresh <= 0 {
		refresh = time.Second
		if capped {
			refresh = CappedRefresh
		}
	}
	return &Learner{store: store, capped: capped, aimd: a.withDefaults(), refresh: refresh, now: time.Now, keys: make(map[string]*learnedKey)}
}

// Limit returns the concurrency in force on key, configured at most, and
// the change from what it last returned for key, if any. Callers of a key
// never read wait for the first read (or ctx), so that a process that
// starts does not go at the configured limit while it learns the fleet's,
// unless the store is StoreCapped; the reads after it run behind the call
// that finds one due, which goes on with the limit known (a later call
// tells what the read changed).
func (l *Learner) Limit(ctx context.Context, key string, configured int) (int, *Change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.key(key, configured)
	for k.done != nil && k.read.IsZero() && !l.capped && ctx.Err() == nil {
		done := k.done
		l.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		}
		l.mu.Lock()
	}
	now := l.now()
	if k.done != nil || now.Sub(k.read) < l.refresh {
		return k.tell(key, configured, false)
	}
	k.done = make(chan struct{})
	if !k.read.IsZero() || l.capped {
		go l.read(context.WithoutCancel(ctx), key, configured, k, k.cur, now)
		return k.tell(key, configured, false)
	}
	before := k.cur
	l.mu.Unlock()
	l.read(ctx, key, configured, k, before, now)
	l.mu.Lock()
	return k.tell(key, configured, false)
}

// read reads key's limit from the store into k, raised if a quiet period
// has passed since its last change by the store's clock, for a read due at
// now (k.done made, k.cur then before), and ends it. l.mu is not held.
func (l *Learner) read(ctx context.Context, key string, configured int, k *learnedKey, before Learned, now time.Time) {
	cur, storeNow, ok, err := l.store.LoadLimit(ctx, key)
	if !ok {
		cur = Learned{}
	}
	if next, raise := l.aimd.raise(cur, configured, storeNow); err == nil && raise {
		if stored, swapped, err := l.store.SwapLimit(ctx, key, cur, next); err == nil && swapped {
			cur = stored
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	close(k.done)
	k.done = nil
	if err != nil && ctx.Err() != nil { // the caller gave up: the store said nothing, the next caller reads
		return
	}
	k.read = now
	switch {
	case err != nil: // raised by this process's clock, so that a limit lowered during an outage comes back
		if next, raise := l.aimd.raise(Learned{Limit: k.cur.Limit, Since: k.changed}, configured, now); raise {
			k.set(Learned{Limit: next, Since: k.cur.Since}, now)
		}
	case k.cur == before && k.refusing == 0: // nothing changed it meanwhile
		k.set(cur, now)
	}
}

// Refused lowers key's limit after the upstream refused a call granted
// under slots, for every process sharing the store, unless it is lower
// already. It returns the change, if any, and an error when the store could
// not be changed (the limit is then lowered in this process only).
func (l *Learner) Refused(ctx context.Context, key string, configured, under int) (*Change, error) {
	// Limit applies no read of the store while refusing, and the change is
	// applied and told under one lock: this refusal tells its own change.
	l.mu.Lock()
	k := l.key(key, configured)
	k.refusing++
	l.mu.Unlock()
	cur, err := l.lowerStored(ctx, key, configured, under)
	l.mu.Lock()
	defer l.mu.Unlock()
	k.refusing--
	now := l.now()
	switch {
	case err != nil:
		if next, lower := l.aimd.lower(k.cur, configured, under); lower {
			k.set(Learned{Limit: next}, now)
		}
	case cur.Since.After(k.cur.Since) || cur.in(configured) <= k.cur.in(configured):
		// (not an older swap's result over a lower limit applied since)
		k.read = now
		k.set(cur, now)
	}
	_, ch := k.tell(key, configured, true)
	return ch, err
}

// lowerStored lowers key's limit in the store after a refusal of a call
// granted under under, unless it is lower already, and returns the
// store's limit after it.
func (l *Learner) lowerStored(ctx context.Context, key string, configured, under int) (Learned, error) {
	for range 3 { // another process may change it meanwhile
		cur, _, ok, err := l.store.LoadLimit(ctx, key)
		if err != nil {
			return Learned{}, err
		}
		if !ok {
			cur = Learned{}
		}
		next, lower := l.aimd.lower(cur, configured, under)
		if !lower {
			return cur, nil
		}
		if cur, ok, err = l.store.SwapLimit(ctx, key, cur, next); ok || err != nil {
			return cur, err
		}
	}
	return Learned{}, errors.New("throttle: the learned limit kept changing under this process")
}

// set makes cur (none if its Limit is 0) the key's limit at now, by this
// process's clock. The Learner's mu is held.
func (k *learnedKey) set(cur Learned, now time.Time) {
	if cur.Limit == 0 {
		cur = Learned{}
	}
	if cur.Limit != k.cur.Limit {
		k.changed = now
	}
	k.cur = cur
}

// tell returns the limit in force on key (state k) and its change since
// last told, if any (refused: made by a refusal). The Learner's mu is held.
func (k *learnedKey) tell(key string, configured int, refused bool) (int, *Change) {
	limit := min(k.cur.in(configured), configured)
	if limit == k.told {
		return limit, nil
	}
	ch := &Change{Key: key, From: k.told, To: limit, Refused: refused}
	k.told = limit
	return limit, ch
}

// key returns key's state, making it (as told configured) if new. l.mu is
// held.
func (l *Learner) key(key string, configured int) *learnedKey {
	return getOrMake(l.keys, key, func() *learnedKey { return &learnedKey{told: configured} })
}
