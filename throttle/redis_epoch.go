package throttle

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ledger is what a process knows of the Redis state a restart would lose,
// per throttle key with rate windows: the key's epoch as last seen, the
// grants this process took that are still in a window, per window bucket
// (the buckets the scripts count in), the last fill of each window it saw
// (every process's grants: see restore.lua), and the end of a cooldown it
// knows of. It costs a map update per call and a few hundred bytes per key.
type ledger struct {
	mu   sync.Mutex
	keys map[string]*keyRecord
	adds int // grants since the last sweep
	// skew is the server's clock less this process's, as of the last grant,
	// so that records are judged by the clock that wrote them.
	skew int64
}

type keyRecord struct {
	epoch    string
	cooldown int64               // unix ms; 0 none
	windows  map[int64]*grantLog // by period (ms)
	// group: for a member's key (see Request.Members), its request's key,
	// whose epoch and hash tag it shares. until: for such a request's
	// key, when its members' records hold nothing any more (unix ms).
	group string
	until int64
}

// grantLog is one window's grants, as a history in unix ms (the server's
// clock), and the window's fill as this process last saw it: seen units
// counted at seenAt (unix ms; 0: none in the window).
type grantLog struct {
	history
	limit        int
	seen, seenAt int64
}

// sweepEvery is how many grants pass between sweeps of the records no
// window counts any more.
const sweepEvery = 4096

func (g *grantLog) prune(nowMs int64) {
	g.history.prune(nowMs)
	if g.seenAt+g.period+g.width <= nowMs {
		g.seen, g.seenAt = 0, 0
	}
}

// empty reports whether g holds nothing to write back (after prune).
func (g *grantLog) empty() bool { return len(g.buckets) == 0 && g.seenAt == 0 }

func (l *ledger) record(key string) *keyRecord {
	if l.keys == nil {
		l.keys = make(map[string]*keyRecord)
	}
	rec := l.keys[key]
	if rec == nil {
		rec = &keyRecord{windows: make(map[int64]*grantLog)}
		l.keys[key] = rec
	}
	return rec
}

// now returns the server's time in unix ms, as far as the ledger knows it.
// The caller holds l.mu.
func (l *ledger) now() int64 { return time.Now().UnixMilli() + l.skew }

// epoch returns the epoch last seen for key, or "" when this process has no
// grant in the key's windows any more, nor saw them lately: then it has
// nothing to write back, and the epoch key may have expired with the
// windows, which is no loss.
func (l *ledger) epoch(key string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := l.keys[key]
	if rec == nil {
		return ""
	}
	now := l.now()
	for _, g := range rec.windows {
		if g.prune(now); !g.empty() {
			return rec.epoch
		}
	}
	return ""
}

// learn records the epoch a script answered for key.
func (l *ledger) learn(key, epoch string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record(key).epoch = epoch
}

// add records a grant of units (0: a refusal) at ms (the server's clock) in
// every window of ws, and fills, when known, what each window counted then
// (the acquire script's answer, in ws's order).
func (l *ledger) add(key string, ws []Window, ms int64, units int, fills []int64) {
	if len(ws) == 0 || units == 0 && len(fills) != len(ws) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.skew = ms - time.Now().UnixMilli()
	l.addLocked(l.record(key), ws, ms, units, fills)
}

// addMembers is add for the members of a request on key (see
// Request.Members): fills holds each member's windows in turn. The members'
// records take key's epoch.
func (l *ledger) addMembers(key string, members []string, ws []Window, ms int64, units int, fills []int64) {
	if units == 0 && len(fills) != len(ws)*len(members) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.skew = ms - time.Now().UnixMilli()
	g := l.record(key)
	for _, w := range ws {
		g.until = max(g.until, ms+w.Period.Milliseconds()*(BucketsPerWindow+1)/BucketsPerWindow+1)
	}
	for i, m := range members {
		rec := l.record(MemberKey(key, m))
		rec.group, rec.epoch = key, g.epoch
		var f []int64
		if len(fills) == len(ws)*len(members) {
			f = fills[i*len(ws) : (i+1)*len(ws)]
		}
		l.addLocked(rec, ws, ms, units, f)
	}
}

// addLocked is add on rec; the caller holds l.mu.
func (l *ledger) addLocked(rec *keyRecord, ws []Window, ms int64, units int, fills []int64) {
	for i, w := range ws {
		p := w.Period.Milliseconds()
		g := rec.windows[p]
		if g == nil {
			g = &grantLog{history: history{period: p, width: p / BucketsPerWindow}}
			rec.windows[p] = g
		}
		g.prune(ms)
		g.limit = w.Limit
		if len(fills) == len(ws) && ms >= g.seenAt {
			g.seen, g.seenAt = fills[i], ms
		}
		if units == 0 {
			continue
		}
		g.add(ms, units)
	}
	if l.adds++; l.adds >= sweepEvery {
		l.adds = 0
		l.sweep(ms)
	}
}

// remove takes back a grant of units at ms that was refunded, on each of
// keys.
func (l *ledger) remove(ws []Window, ms int64, units int, keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, key := range keys {
		rec := l.keys[key]
		if rec == nil {
			continue
		}
		for _, w := range ws {
			if g := rec.windows[w.Period.Milliseconds()]; g != nil {
				g.remove(ms, units)
			}
		}
	}
}

// groupEpoch returns the epoch last seen for key, a request's key with
// Members, or "" when none of its members' records holds anything any more
// (see epoch).
func (l *ledger) groupEpoch(key string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rec := l.keys[key]; rec != nil && rec.until > l.now() {
		return rec.epoch
	}
	return ""
}

// grouped returns the members' keys recorded for key, a request's key with
// Members.
func (l *ledger) grouped(key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var keys []string
	for k, rec := range l.keys {
		if rec.group == key {
			keys = append(keys, k)
		}
	}
	return keys
}

// cooldown records that key cools down until ms (the server's clock).
func (l *ledger) cooldown(key string, ms int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rec := l.record(key); ms > rec.cooldown {
		rec.cooldown = ms
	}
}

// sweep forgets the keys with nothing left to write back at nowMs: no grant
// in a window, no cooldown in force. Their epoch goes with them. The caller
// holds l.mu.
func (l *ledger) sweep(nowMs int64) {
	for key, rec := range l.keys {
		empty := rec.cooldown <= nowMs && rec.until <= nowMs
		for p, g := range rec.windows {
			if g.prune(nowMs); g.empty() {
				delete(rec.windows, p)
			} else {
				empty = false
			}
		}
		if empty {
			delete(l.keys, key)
		}
	}
}

// written is what a process writes back for one window (see restore.lua).
type written struct {
	w            Window
	seen, seenAt int64   // the fill last seen, and when (0: none)
	buckets      []int64 // the process's grants still in it: index, count, ...
}

// snapshot returns what this process would write back for key: the epoch it
// knew, the cooldown, and its windows, and for a member's key its request's
// key (group). The epoch is "" when no window holds anything.
func (l *ledger) snapshot(key string) (epoch string, cooldown int64, windows []written, group string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := l.keys[key]
	if rec == nil {
		return "", 0, nil, ""
	}
	now := l.now()
	for p, g := range rec.windows {
		if g.prune(now); g.empty() {
			continue
		}
		wr := written{w: Window{Limit: g.limit, Period: time.Duration(p) * time.Millisecond}, seen: g.seen, seenAt: g.seenAt}
		for _, b := range g.buckets {
			if b.n > 0 {
				wr.buckets = append(wr.buckets, b.idx, int64(b.n))
			}
		}
		windows = append(windows, wr)
	}
	if len(windows) == 0 {
		return "", 0, nil, ""
	}
	return rec.epoch, rec.cooldown, windows, rec.group
}

// known returns the keys whose epoch this process knows.
func (l *ledger) known() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var keys []string
	for key, rec := range l.keys {
		if rec.epoch != "" {
			keys = append(keys, key)
		}
	}
	return keys
}

// restore writes back what this process knows of key's state (see
// restore.lua), if Redis lost it, and learns the epoch in force. Restores
// are made one at a time, and once per epoch: a second finds the epoch known.
func (b *Redis) restore(ctx context.Context, key string) error {
	b.restoreMu.Lock()
	defer b.restoreMu.Unlock()
	epoch, cd, wrs, group := b.ledger.snapshot(key)
	if epoch == "" {
		return nil
	}
	ws := make([]Window, len(wrs))
	for i, wr := range wrs {
		ws[i] = wr.w
	}
	k := b.names(key, ws)
	if group != "" { // a member's windows, under its request's epoch and tag
		g := b.names(group, nil)
		k = b.namesIn(hashTag(group), key, ws)
		k.epoch, k.cooldown = g.epoch, g.cooldown
	}
	keys := append([]string{k.epoch, k.cooldown}, k.windows...)
	args := []any{epoch, newLeaseID(), cd}
	for _, wr := range wrs {
		args = append(args, wr.w.Period.Milliseconds(), wr.w.Limit, wr.seen, wr.seenAt, len(wr.buckets)/2)
		for _, n := range wr.buckets {
			args = append(args, n)
		}
	}
	octx, cancel := b.opCtx(ctx)
	defer cancel()
	now, err := replyText(b.restoreSc.run(octx, b.rdb, keys, args...))
	if err != nil {
		return err
	}
	if now != epoch {
		b.ledger.learn(key, now)
	}
	return nil
}

// restoreAll restores every key whose epoch this process knows; the probe
// runs it before calls go back to a Redis that was away, so that what a
// restart lost is written back before any process takes more.
// An error the server answered (other than that it cannot serve now) is not
// an outage: that key is skipped.
func (b *Redis) restoreAll() error {
	for _, key := range b.ledger.known() {
		if err := b.restore(context.Background(), key); err != nil {
			var rerr redisError
			if errors.As(err, &rerr) && !unavailableReply(rerr.Error()) {
				continue
			}
			return err
		}
	}
	return nil
}
