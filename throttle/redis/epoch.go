package redis

import (
	"context"
	"sync"
	"time"

	"github.com/wecomkit/wecom/throttle"
	"github.com/wecomkit/wecom/throttle/internal/window"
)

// ledger is what a process knows of the Redis state a restart would lose
// (see REDIS.md, "Redis restarted empty"), per throttle key with rate
// windows. It costs a map update per call and a few hundred bytes per key.
type ledger struct {
	mu   sync.Mutex
	keys map[string]*keyRecord
	adds int        // grants since the last sweep
	ref  *serverRef // Backend.ref: the server's clock, which records are in
}

// keyRecord is a key's epoch as last seen, the end of a cooldown it knows
// of (unix ms; 0 none) and its windows by period (ms).
type keyRecord struct {
	epoch    string
	cooldown int64
	windows  map[int64]*grantLog
	// group: for a member's key (see Request.Members), its request's key,
	// whose epoch and hash tag it shares. until: for such a request's
	// key, when its members' records hold nothing any more (unix ms).
	group string
	until int64
}

// grantLog is one window's grants, per bucket of the scripts, in unix ms
// (the server's clock), and the window's fill as this process last saw it
// (every process's grants: see restore.lua): seen units counted at seenAt
// (unix ms; 0: none in the window).
type grantLog struct {
	window.History
	limit        int
	seen, seenAt int64
}

// sweepEvery is how many grants pass between sweeps of the records no
// window counts any more.
const sweepEvery = 4096

func (g *grantLog) prune(nowMs int64) {
	g.History.Prune(nowMs)
	if g.seenAt+g.Period+g.Width <= nowMs {
		g.seen, g.seenAt = 0, 0
	}
}

// holds prunes rec's windows at nowMs, drops those left empty, and reports
// whether any still holds something to write back.
func (rec *keyRecord) holds(nowMs int64) bool {
	for p, g := range rec.windows {
		if g.prune(nowMs); len(g.Buckets) == 0 && g.seenAt == 0 {
			delete(rec.windows, p)
		}
	}
	return len(rec.windows) > 0
}

func (l *ledger) record(key string) *keyRecord {
	return getOrMake(l.keys, key, func() *keyRecord { return &keyRecord{windows: make(map[int64]*grantLog)} })
}

// epoch returns the epoch last seen for key, or "" when nothing of key is
// left to write back (its epoch key may then have expired: no loss): in
// its windows, or, for group, a request's key with Members, in its
// members' records.
func (l *ledger) epoch(key string, group bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.ref.now().UnixMilli()
	if rec := l.keys[key]; rec != nil && (group && rec.until > now || !group && rec.holds(now)) {
		return rec.epoch
	}
	return ""
}

// learn records the epoch a script answered for key.
func (l *ledger) learn(key, epoch string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record(key).epoch = epoch
}

// cooldown records that key cools down until ms (the server's clock).
func (l *ledger) cooldown(key string, ms int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := l.record(key)
	rec.cooldown = max(rec.cooldown, ms)
}

// add records a grant of units (0: a refusal) at ms (the server's clock) in
// every window of ws, on key's own windows or, for a request with members
// (see Request.Members), on each member's, and fills, when known, what each
// window counted then (the acquire script's answer, in ws's order, each
// member's in turn). The members' records take key's epoch. Every
// sweepEvery records it forgets the keys with nothing left to write back:
// no grant in a window, no cooldown in force. Their epoch goes with them.
func (l *ledger) add(key string, members []string, ws []throttle.Window, ms int64, units int, fills []int64) {
	n := max(1, len(members))
	if len(ws) == 0 || units == 0 && len(fills) != len(ws)*n {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.record(key)
	for i := range n {
		rec := g
		if len(members) > 0 {
			rec = l.record(throttle.MemberKey(key, members[i]))
			rec.group, rec.epoch = key, g.epoch
		}
		for j, w := range ws {
			p := w.Period.Milliseconds()
			if len(members) > 0 {
				g.until = max(g.until, ms+p*(throttle.BucketsPerWindow+1)/throttle.BucketsPerWindow+1)
			}
			h := getOrMake(rec.windows, p, func() *grantLog {
				return &grantLog{History: window.History{Period: p, Width: p / throttle.BucketsPerWindow}}
			})
			h.prune(ms)
			h.limit = w.Limit
			if len(fills) == len(ws)*n && ms >= h.seenAt {
				h.seen, h.seenAt = fills[i*len(ws)+j], ms
			}
			if units != 0 {
				h.Add(ms, units)
			}
		}
	}
	if l.adds += n; l.adds < sweepEvery {
		return
	}
	l.adds -= sweepEvery
	for key, rec := range l.keys {
		if !rec.holds(ms) && rec.cooldown <= ms && rec.until <= ms {
			delete(l.keys, key)
		}
	}
}

// remove takes back a grant of units at ms that was refunded, on each of
// keys.
func (l *ledger) remove(ws []throttle.Window, ms int64, units int, keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, key := range keys {
		if rec := l.keys[key]; rec != nil {
			for _, w := range ws {
				if g := rec.windows[w.Period.Milliseconds()]; g != nil {
					g.Remove(ms, units)
				}
			}
		}
	}
}

// keysWhere returns the keys whose record satisfies f.
func (l *ledger) keysWhere(f func(*keyRecord) bool) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var keys []string
	for k, rec := range l.keys {
		if f(rec) {
			keys = append(keys, k)
		}
	}
	return keys
}

// snapshot returns what this process would write back for key: the epoch
// it knew ("" when no window holds anything), for a member's key its
// request's key, the windows, and restore.lua's ARGV from the cooldown on.
func (l *ledger) snapshot(key string) (epoch, group string, ws []throttle.Window, argv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := l.keys[key]
	if rec == nil || !rec.holds(l.ref.now().UnixMilli()) {
		return "", "", nil, nil
	}
	argv = []any{rec.cooldown}
	for p, g := range rec.windows {
		ws = append(ws, throttle.Window{Limit: g.limit, Period: time.Duration(p) * time.Millisecond})
		var pairs []any // the process's grants still in the window: index, count, ...
		for _, b := range g.Buckets {
			if b.N > 0 {
				pairs = append(pairs, b.Idx, int64(b.N))
			}
		}
		argv = append(append(argv, p, g.limit, g.seen, g.seenAt, len(pairs)/2), pairs...)
	}
	return rec.epoch, rec.group, ws, argv
}

// restore writes back what this process knows of key's state (see
// restore.lua), if Redis lost it, and learns the epoch in force. Restores
// are made one at a time, and once per epoch: a second finds the epoch known.
func (b *Backend) restore(ctx context.Context, key string) error {
	b.restoreMu.Lock()
	defer b.restoreMu.Unlock()
	epoch, group, ws, argv := b.ledger.snapshot(key)
	if epoch == "" {
		return nil
	}
	var now string
	var err error
	if group != "" { // a member's windows, under its request's epoch and tag
		now, err = b.restoreMember(ctx, key, group, epoch, ws, argv)
	} else {
		o := b.names(key, ws)
		keys := append([]string{o.epoch, o.cooldown}, o.windows...)
		octx, cancel := b.opCtx(ctx)
		defer cancel()
		now, err = replyAs[string](b.restoreSc.run(octx, b.rdb, keys, append([]any{epoch, newLeaseID()}, argv...)...))
	}
	if err == nil && now != epoch {
		b.ledger.learn(key, now)
	}
	return err
}

// restoreAll restores every key whose epoch this process knows; the probe
// runs it before calls go back to a Redis that was away, so that what a
// restart lost is written back before any process takes more. A key the
// server refused (see refused) is skipped.
func (b *Backend) restoreAll() error {
	for _, key := range b.ledger.keysWhere(func(rec *keyRecord) bool { return rec.epoch != "" }) {
		if err := b.restore(context.Background(), key); err != nil && !refused(err) {
			return err
		}
	}
	return nil
}
