// The Redis backend's hot path without Redis (REDIS.md, The hot path), and
// the leases this process holds (held), so that a lease handed on locally is
// never released twice.

package redis

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wecomkit/wecom/throttle"
)

// hot is what this process knows of a key beyond its line, while it holds a
// lease on the key or has units of its block left. Guarded by Backend.mu.
type hot struct {
	// contended: another process queued for a slot (noticed: when told). A
	// later answer that none waits clears it; slots go on locally until quiet.
	contended bool
	noticed   time.Time
	quiet     time.Time
	block     block
	holding   int // the leases this process holds on the key
	leaving   int // of them, those being released (unhold, not yet letGo)
	// held: the leases this process holds on the key, by Redis lease id
	// (heldOf), so that holdsAll reads the key's own leases, not every key's
	held map[string]*held
}

// localSpan is how long after a Redis answer that no other process waits
// this process may hand a key's slots on without asking again, unless its
// subscription, which would bring the notice that one does, has been
// answered since (healthUp): a waiter refused again repeats its notice at
// its next ask half a second or more after it queued, so a notice lost
// while the subscription broke costs it about a second and a half.
const localSpan = 200 * time.Millisecond

// localTurns is how many times, within localSpan of its grant, a slot Redis
// granted may go on locally while another process waits for the key, before
// a hand-over through Redis yields it (REDIS.md, The hot path).
const localTurns = 7

// idle reports whether h says nothing worth keeping.
func (h *hot) idle() bool { return h.holding <= 0 && h.block.units == 0 }

// mayHandOn reports whether h lets this process hand a slot on without
// Redis: Redis said that no other process waits, and no notice since says
// one does, within localSpan or while Redis answers (see localSpan).
func (b *Backend) mayHandOn(h *hot) bool {
	return !b.cold && h != nil && !h.contended && !h.quiet.IsZero() &&
		(time.Now().Before(h.quiet) || b.health.Load() == healthUp)
}

// mayTurn reports whether h lets this process hand on the slot held as
// from: while no other process waits, or, while one does, for localTurns
// turns within quietFor (localSpan) of Redis's grant.
func (b *Backend) mayTurn(h *hot, from held) bool {
	return b.mayHandOn(h) || !b.cold && h != nil && h.contended &&
		from.turns < localTurns && time.Since(from.since) < b.quietFor
}

// block is window units taken ahead in one acquire script, counted in the
// bucket of at (unix ms, the server's clock), which start calls until until
// (the local clock).
type block struct {
	units   int
	at      int64
	until   time.Time
	windows []throttle.Window
}

// maxBlock bounds the window units one block takes.
const maxBlock = 256

// blockSpan returns how long a block for ws may start calls (0: ws's
// windows are too small to spare a bucket's worth). The block counts at its
// end, so that a call it starts leaves the window no earlier than one
// counted as it started. On a key no other process waits for, three
// buckets of the shortest window, at most maxBlockSpan: longer than a call
// of a second, so that a process hands its slots on round after round of
// such calls without Redis (bench/providers.sh, 1 s calls on 1-minute
// windows: with one bucket, 600 ms, every round asked Redis). On a
// contended key, where processes take turns and a block outlives its
// process's turn, one bucket, at most a second: three cost the main job in
// three processes (hotpath.sh w2x3) 0.6-1.3 points against one.
func blockSpan(ws []throttle.Window, contended bool) time.Duration {
	span, n := maxBlockSpan, time.Duration(3)
	if contended {
		span, n = time.Second, 1
	}
	for _, w := range ws {
		span = min(span, (n * w.Period / throttle.BucketsPerWindow).Truncate(time.Millisecond))
	}
	return span
}

// maxBlockSpan bounds blockSpan: how long the hot path may start calls from
// units taken ahead without asking Redis, after a loss it has not noticed.
const maxBlockSpan = 2 * time.Second

// blockWant returns how many units the ask of r, with waiting waiters
// queued, takes ahead: enough for a few rounds of them, at most a hundredth
// of each window. A request with a slot spends them as its slot goes on
// locally (handLocal); one without starts from them (startFromBlock).
func blockWant(r throttle.Request, waiting int) int {
	if len(r.Windows) == 0 || len(r.Members) > 0 || blockSpan(r.Windows, true) <= 0 {
		return 0
	}
	n := min(maxBlock, 8*max(waiting, 1)*r.Units())
	for _, w := range r.Windows {
		n = min(n, w.Limit/throttle.BucketsPerWindow)
	}
	return n
}

// hotOf returns the hot state of key, made if missing. The caller holds
// Backend.mu.
func (b *Backend) hotOf(key string) *hot { return getOrMake(b.hot, key, func() *hot { return &hot{} }) }

// noteContended records, for a key with hot state, whether another process
// waits for its slots, as told by a notice or by the answer to a request
// sent at sent (one sent before the last notice does not undo it).
func (b *Backend) noteContended(key string, yes bool, sent time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.hot[key]
	switch {
	case h == nil:
	case yes:
		h.contended, h.noticed = true, time.Now()
	case sent.After(h.noticed):
		h.contended, h.quiet = false, time.Now().Add(b.quietFor)
	}
}

// addBlock keeps units taken ahead for r's windows, counted at at (unix
// ms), usable until until; what is left of a block goes back (refund).
func (b *Backend) addBlock(r throttle.Request, units int, at int64, until time.Time) {
	b.ledger.add(r.Key, nil, r.Windows, at, units, nil)
	b.mu.Lock()
	h := b.hotOf(r.Key)
	old := h.block
	h.block = block{units: units, at: at, until: until, windows: r.Windows}
	b.mu.Unlock()
	if old.units > 0 {
		go b.refund(r.Key, old) // off the caller's path
	}
	time.AfterFunc(time.Until(until), func() {
		b.mu.Lock()
		h := b.hot[r.Key]
		var left block
		if h != nil && h.block.at == at && h.block.until.Equal(until) {
			left, h.block = h.block, block{}
			if h.idle() {
				delete(b.hot, r.Key)
			}
		}
		b.mu.Unlock()
		b.refund(r.Key, left)
	})
}

// startFromBlock grants r, a request with windows and no slot (an egress
// IP's window, say), from its key's block, without Redis, if the block
// covers it and, unless head (r heads the key's line), no waiter of this
// process queues for the key before it. It reports whether it did.
func (b *Backend) startFromBlock(r throttle.Request, head bool) (throttle.Lease, bool) {
	if r.Concurrency > 0 || len(r.Windows) == 0 || len(r.Members) > 0 || len(r.With) > 0 {
		return throttle.Lease{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.hot[r.Key]
	if k := b.keys[r.Key]; b.cold || h == nil || !head && k != nil && k.waiters.Len() > 0 {
		return throttle.Lease{}, false
	}
	blk := &h.block
	if blk.units < r.Units() || !time.Now().Before(blk.until) || !slices.Equal(blk.windows, r.Windows) {
		return throttle.Lease{}, false
	}
	blk.units -= r.Units()
	return throttle.Lease{Key: r.Key, ID: newLeaseID(), Granted: time.UnixMilli(blk.at)}, true
}

// dropBlock gives back what is left of key's block: the key is cooling
// down, and no call may start from it.
func (b *Backend) dropBlock(key string) {
	b.mu.Lock()
	var left block
	if h := b.hot[key]; h != nil {
		left, h.block = h.block, block{}
		if h.idle() {
			delete(b.hot, key)
		}
	}
	b.mu.Unlock()
	if left.units > 0 {
		go b.refund(key, left) // off the caller's path (the subscription's, for a notice)
	}
}

// refund gives back the units of blk that started no call: a lease without
// a slot whose window counts go back.
func (b *Backend) refund(key string, blk block) {
	if blk.units > 0 {
		b.giveBack(throttle.Lease{Key: key, Granted: time.UnixMilli(blk.at)}, throttle.Request{Key: key, Windows: blk.windows, Weight: blk.units})
	}
}

// handLocal hands the slot of l, held as from and just released, to next,
// the waiter claimed for it, without Redis if it may: still in its era, no
// other process waits or its turns are not over (mayTurn), half the TTL
// left, the learned limit not under it, and the key's block covers next's
// window units. It reports whether it did.
func (b *Backend) handLocal(l throttle.Lease, from held, next *rwaiter) bool {
	r, granted := b.capped(next.Req), b.ref.now()
	if r.Concurrency < l.Concurrency || granted.Add(r.LeaseTTL()/2).After(l.Expires) {
		return false
	}
	b.mu.Lock()
	h := b.hot[l.Key]
	if from.era != b.era.Load() || !b.mayTurn(h, from) {
		b.mu.Unlock()
		return false
	}
	if len(r.Windows) > 0 {
		blk := &h.block
		if blk.units < r.Units() || !time.Now().Before(blk.until) || !slices.Equal(blk.windows, r.Windows) {
			b.mu.Unlock()
			return false
		}
		blk.units -= r.Units()
		granted = time.UnixMilli(blk.at)
	}
	n := l
	n.ID = redisID(l.ID) + "~" + strconv.FormatUint(b.gen.Add(1), 36)
	n.Granted, n.With = granted, nil
	b.holdLocked(n, held{era: from.era, turns: from.turns + 1, since: from.since})
	b.mu.Unlock()
	b.settle(l.Key, next, n, false, false)
	return true
}

// redisID returns the id under which Redis holds the slot of lease id: a
// lease handed on locally ("id~n") is named after the lease Redis granted.
func redisID(id string) string {
	base, _, _ := strings.Cut(id, "~")
	return base
}

// held is a lease of this process's: its id, when its slot expires by the
// server's clock, Backend.era at the grant, and since Redis granted the slot
// (at since, the local clock) how many times it went on locally (mayTurn).
type held struct {
	key, id string
	until   time.Time
	era     uint64
	turns   int
	since   time.Time
}

// holdLocked records l as held by this process, its slot granted and handed
// on as from says. The caller holds Backend.mu.
func (b *Backend) holdLocked(l throttle.Lease, from held) {
	if !l.OwnSlot() {
		return
	}
	if len(b.hot) >= b.heldSweep { // keys kept by leases that expired unreleased
		for _, h := range b.hot {
			b.sweepHeld(h.held)
		}
		b.heldSweep = max(1024, 2*len(b.hot))
	}
	from.key, from.id, from.until = l.Key, l.ID, l.Expires
	h := b.hotOf(l.Key)
	if h.held == nil {
		h.held = make(map[string]*held)
	}
	h.held[redisID(l.ID)] = &from
	h.holding++
}

// heldOf returns the entry of lease l among its key's held leases (nil:
// none). The caller holds Backend.mu.
func (b *Backend) heldOf(l throttle.Lease) *held {
	if h := b.hot[l.Key]; h != nil {
		return h.held[redisID(l.ID)]
	}
	return nil
}

// sweepHeld forgets the leases of a key's held leases that expired
// unreleased, and returns when the first of the others expires (zero:
// none). The caller holds Backend.mu.
func (b *Backend) sweepHeld(leases map[string]*held) (first time.Time) {
	now := b.ref.now()
	for id, h := range leases {
		switch {
		case now.After(h.until):
			delete(leases, id)
			b.dropHolding(h.key, 0)
		case first.IsZero() || h.until.Before(first):
			first = h.until
		}
	}
	return first
}

// hold records leases granted to this process by a request sent in era (a
// loss noticed while it ran makes them older than the new era).
func (b *Backend) hold(era uint64, ls ...throttle.Lease) {
	b.mu.Lock()
	for _, l := range ls {
		b.holdLocked(l, held{era: era, since: time.Now()})
	}
	b.mu.Unlock()
}

// ownsLocked reports whether l may be released or extended: it was neither
// handed on nor released here; h is its entry among its key's held leases
// (nil: unknown). The caller holds Backend.mu.
func (b *Backend) ownsLocked(l throttle.Lease) (h *held, ok bool) {
	if b.releasedLater(l.ID) {
		return nil, false // released already, the script not yet sent
	}
	if h = b.heldOf(l); h != nil {
		return h, h.id == l.ID
	}
	return nil, redisID(l.ID) == l.ID
}

// unhold forgets l as held, as it is released (ErrLeaseNotHeld, see
// ownsLocked): known reports that this process held it, as h; the caller
// then counts it off its key with letGo.
func (b *Backend) unhold(l throttle.Lease) (known bool, h held, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.ownsLocked(l)
	switch {
	case !ok:
		return false, h, throttle.ErrLeaseNotHeld
	case e == nil:
		return false, h, nil
	}
	k := b.hotOf(e.key)
	delete(k.held, redisID(l.ID))
	k.leaving++
	return true, *e, nil
}

// letGo counts a lease unhold forgot off key.
func (b *Backend) letGo(key string) {
	b.mu.Lock()
	b.dropHolding(key, 1)
	b.mu.Unlock()
}

// spanFor returns blockSpan for r's key as this process knows it. The
// caller holds Backend.mu.
func (b *Backend) spanFor(r throttle.Request) time.Duration {
	h := b.hot[r.Key]
	return blockSpan(r.Windows, h != nil && h.contended)
}

// blockFor returns the window units an ask for r takes ahead, waiting
// waiters queued: none while the key's block has enough left for a round
// of them and for r itself. The caller holds Backend.mu.
func (b *Backend) blockFor(r throttle.Request, waiting int) int {
	want := blockWant(r, waiting)
	if h := b.hot[r.Key]; b.cold || h != nil && h.block.units >= max(want/4, r.Units()) && time.Now().Before(h.block.until) {
		return 0
	}
	return want
}

// dropHolding counts one lease fewer held on key, and leaving (1 or 0)
// fewer being released. The caller holds Backend.mu.
func (b *Backend) dropHolding(key string, leaving int) {
	if h := b.hot[key]; h != nil {
		h.holding, h.leaving = h.holding-1, h.leaving-leaving
		if h.idle() {
			delete(b.hot, key)
		}
	}
}

// holdsAll reports whether this process, while no other waits, holds every
// slot of r's key and releases none of them yet (a release under way found
// no waiter), so that a new head waits for its own release rather than ask
// Redis; until is when the first of them expires (the server's clock), when
// the head asks at the latest. The caller holds Backend.mu.
func (b *Backend) holdsAll(r throttle.Request) (yes bool, until time.Duration) {
	h := b.hot[r.Key]
	c := b.capped(r).Concurrency
	if c <= 0 || !b.mayHandOn(h) || h.holding-h.leaving < c {
		return false, 0
	}
	first := b.sweepHeld(h.held) // count only live leases
	h = b.hot[r.Key]
	return h != nil && h.holding-h.leaving >= c, first.Sub(b.ref.now())
}
