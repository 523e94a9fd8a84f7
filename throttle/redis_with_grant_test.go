package throttle

// Grants across processes with With slots: the lock a queued process
// recorded is busy, or its waiter left; and the parsing of a grant's With
// section.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wecomkit/wecom/internal/redistest"
)

// TestRedisWithGrantLockBusy: the lock b's waiter recorded is held by
// another call when a's hand-over yields to b: the grant comes without
// it, the waiter finds it busy, gives the slot back (a's waiter gets it)
// and waits for the lock apart; once the lock is free it gets its lease.
// Nothing leaks.
func TestRedisWithGrantLockBusy(t *testing.T) {
	bs, _ := gatedBackends(t, 2)
	a, b := bs[0], bs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key, lock := markRequest("", 1).Key, markRequest("b", 1).With[0]
	h := mustTake(t, a, markRequest("h", 1))
	other := mustTake(t, a, lock) // another call holds b's customer
	bw := acquireAsync(ctx, b, markRequest("b", 1))
	headRefused(t, b, key)
	aw := acquireAsync(ctx, a, markRequest("a", 1))
	headRefused(t, a, key)

	if err := a.Release(ctx, h); err != nil { // yields to b, without the lock
		t.Fatal(err)
	}
	res := <-aw // b gave the slot back
	if res.err != nil {
		t.Fatalf("a: %v", res.err)
	}
	if n := holders(t, a, lock.Key); n != 1 {
		t.Fatalf("b's lock has %d holders, want the other call's only", n)
	}
	if n := holders(t, a, key); n != 1 {
		t.Fatalf("the API has %d holders, want a's waiter only", n)
	}
	if err := a.Release(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, res.l); err != nil {
		t.Fatal(err)
	}
	got := <-bw
	if got.err != nil || len(got.l.With) != 1 || got.l.With[0].Key != lock.Key || !got.l.With[0].HoldsSlot() {
		t.Fatalf("b: %+v, %v; want its lease with its lock", got.l, got.err)
	}
	if err := b.Release(ctx, got.l); err != nil {
		t.Fatal(err)
	}
	noHolders(t, a, key, lock.Key, h.With[0].Key, res.l.With[0].Key)
}

// TestRedisWithGrantRecordStale: the waiter b recorded its lock for left
// before a's hand-over yields to b, which grants the slot with that
// (free) lock. With no waiter left, b gives all of it back; with another
// waiter, for another customer, that waiter gets the slot without the
// stale lock, which is released, and takes its own. Nothing leaks.
func TestRedisWithGrantRecordStale(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stale func(ctx context.Context, t *testing.T, b *Redis, g *acquireGate) (bw <-chan acquired, open func())
	}{
		{"no waiter", recordedGone},
		{"another waiter", recordedLeft},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs, gs := gatedBackends(t, 2)
			a, b := bs[0], bs[1]
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			key, gone := markRequest("", 1).Key, markRequest("gone", 1).With[0].Key
			h := mustTake(t, a, markRequest("h", 1))
			bw, open := tc.stale(ctx, t, b, gs[1])
			aw := acquireAsync(ctx, a, markRequest("a", 1))
			headRefused(t, a, key)
			if got := waitingProcs(t, a, key); len(got) != 2 || got[0] != b.proc {
				t.Fatalf("waiting processes %v, want b first", got)
			}

			if err := a.Release(ctx, h); err != nil { // yields to b, with the stale lock
				t.Fatal(err)
			}
			open()
			var keys []string
			if bw != nil {
				got := <-bw
				if got.err != nil || len(got.l.With) != 1 || !strings.HasSuffix(got.l.With[0].Key, "|b2") {
					t.Fatalf("b: %+v, %v; want its lease with its own lock", got.l, got.err)
				}
				if n := holders(t, a, gone); n != 0 {
					t.Errorf("the stale lock has %d holders while b's waiter runs, want 0", n)
				}
				keys = append(keys, got.l.With[0].Key)
				if err := b.Release(ctx, got.l); err != nil {
					t.Fatal(err)
				}
			}
			res := <-aw
			if res.err != nil {
				t.Fatalf("a: %v", res.err)
			}
			if n := holders(t, a, gone); n != 0 {
				t.Errorf("the stale lock has %d holders, want 0", n)
			}
			if err := a.Release(ctx, res.l); err != nil {
				t.Fatal(err)
			}
			noHolders(t, a, append(keys, key, gone, h.With[0].Key, res.l.With[0].Key)...)
		})
	}
}

// recordedGone queues b in Redis with the record of a waiter for customer
// "gone" and no waiter left (as a process whose waiter left without taking
// its turn).
func recordedGone(ctx context.Context, t *testing.T, b *Redis, _ *acquireGate) (<-chan acquired, func()) {
	t.Helper()
	k := b.names(markRequest("", 1).Key, nil)
	if err := b.rdb.ZAdd(ctx, k.waiting, redis.Z{Score: 1, Member: b.proc}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.rdb.HSet(ctx, k.records, b.proc, b.record(markRequest("gone", 1))).Err(); err != nil {
		t.Fatal(err)
	}
	return nil, func() {}
}

// recordedLeft queues b for a waiter for customer "gone", which is
// recorded, then another for customer "b2" whose first ask g holds (so
// that it records nothing yet) once the first left. The returned func lets
// that ask go.
func recordedLeft(ctx context.Context, t *testing.T, b *Redis, g *acquireGate) (<-chan acquired, func()) {
	t.Helper()
	key := markRequest("", 1).Key
	gctx, leave := context.WithCancel(ctx)
	gw := acquireAsync(gctx, b, markRequest("gone", 1))
	headRefused(t, b, key)
	bw := acquireAsync(ctx, b, markRequest("b2", 1))
	queued(t, b, key, 2)
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
	leave()
	if got := <-gw; got.err == nil {
		t.Fatalf("the waiter that left got %+v", got.l)
	}
	<-g.held
	rec, err := b.rdb.HGet(ctx, b.names(key, nil).records, b.proc).Result()
	if err != nil || !strings.HasSuffix(rec, "|gone") {
		t.Fatalf("b's record %q, %v: want the waiter that left's", rec, err)
	}
	return bw, func() { close(g.open) }
}

// TestParseGrantWith: a grant's With section, well formed or not; a
// malformed one still names the leases it can.
func TestParseGrantWith(t *testing.T) {
	const head = "{c}/api\nid\n1000\n61000\n1\n60000\n1\n600\n60000"
	for _, tc := range []struct {
		name  string
		msg   string
		ok    bool
		named []string // the With leases' ids it yields
	}{
		{"none", head, true, nil},
		{"one", head + "\nw\n{c}@l\nid.1\n1\n30000", true, []string{"id.1"}},
		{"two", head + "\nw\n{c}@l\nid.1\n1\n30000\n{c}@m\nid.2\n2\n30000", true, []string{"id.1", "id.2"}},
		{"key w", "w\nid\n1000\n61000\n1\n60000\n1\nw\n{c}@l\nid.1\n1\n30000", true, []string{"id.1"}},
		{"empty", head + "\nw", false, nil},
		{"short", head + "\nw\n{c}@l\nid.1\n1", false, []string{"id.1"}},
		{"zero TTL", head + "\nw\n{c}@l\nid.1\n1\n0", false, []string{"id.1"}},
		{"own key", head + "\nw\n{c}/api\nid.1\n1\n30000", false, []string{"id.1"}},
		{"twice", head + "\nw\n{c}@l\nid.1\n1\n30000\n{c}@l\nid.2\n1\n30000", false, []string{"id.1", "id.2"}},
		{"no windows' end", "{c}/api\nid\n1000\n61000\n1\n60000\n1\n600\nw\n{c}@l\nid.1\n1\n30000", false, []string{"id.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := parseGrant(tc.msg)
			if (err == nil) != tc.ok {
				t.Fatalf("parseGrant: %v, want ok %v", err, tc.ok)
			}
			var ids []string
			for _, l := range g.lease.With {
				ids = append(ids, l.ID)
			}
			if !slices.Equal(ids, tc.named) {
				t.Errorf("With leases %v, want %v", ids, tc.named)
			}
			if tc.ok && len(g.lease.With) > 0 {
				w := g.lease.With[0]
				if w.Key != "{c}@l" || w.Concurrency != 1 || w.Expires.Sub(w.Granted) != 30*time.Second || g.req.With[0].TTL != 30*time.Second {
					t.Errorf("With lease %+v, slot %+v", w, g.req.With[0])
				}
			}
		})
	}
}

// TestRedisWithRecordNextWaiter: a hand-over that serves one waiter of a
// process and queues the process again for the next records the next
// one's lock, for a grant another process may make it.
func TestRedisWithRecordNextWaiter(t *testing.T) {
	b, _ := gatedBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := markRequest("", 1).Key
	h := mustTake(t, b, markRequest("h", 1))
	w1 := acquireAsync(ctx, b, markRequest("b1", 1))
	headRefused(t, b, key)
	w2 := acquireAsync(ctx, b, markRequest("b2", 1))
	queued(t, b, key, 2)
	rec := func() string {
		t.Helper()
		s, err := b.rdb.HGet(ctx, b.names(key, nil).records, b.proc).Result()
		if err != nil {
			t.Fatalf("b's record: %v", err)
		}
		return s
	}
	if s := rec(); !strings.HasSuffix(s, "|b1") {
		t.Fatalf("b's record %q, want its head's lock", s)
	}
	if err := b.Release(ctx, h); err != nil { // serves w1, queues b again
		t.Fatal(err)
	}
	got1 := <-w1
	if got1.err != nil {
		t.Fatal(got1.err)
	}
	if s := rec(); !strings.HasSuffix(s, "|b2") {
		t.Fatalf("b's record %q, want its next waiter's lock", s)
	}
	if err := b.Release(ctx, got1.l); err != nil {
		t.Fatal(err)
	}
	got2 := <-w2
	if got2.err != nil {
		t.Fatal(got2.err)
	}
	if err := b.Release(ctx, got2.l); err != nil {
		t.Fatal(err)
	}
	noHolders(t, b, key, got1.l.With[0].Key, got2.l.With[0].Key, h.With[0].Key)
	if n, err := b.rdb.HLen(ctx, b.names(key, nil).records).Result(); err != nil || n != 0 {
		t.Errorf("%d records left (%v), want none once nobody waits", n, err)
	}
}

// TestRedisMalformedGrantReleased: a grant that does not parse still
// releases the slot and the With leases it names.
func TestRedisMalformedGrantReleased(t *testing.T) {
	bs, _ := gatedBackends(t, 2)
	a, b := bs[0], bs[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := mustTake(t, a, markRequest("m", 1))
	// a window's period missing, and a With lease's limits
	msg := l.Key + "\n" + l.ID + "\n1000\n61000\n1\n60000\n1\n10000\nw\n" + l.With[0].Key + "\n" + l.With[0].ID
	if err := a.rdb.Publish(ctx, b.wakePrefix+b.proc, msg).Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; holders(t, a, l.Key)+holders(t, a, l.With[0].Key) > 0; i++ {
		if i == 5000 {
			t.Fatal("the slots a malformed grant names are still held")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRedisWithRecordOutsideKeys: a hand-over that yields reads the record
// of the process it yields to, whose With slots are not in its KEYS: on a
// Cluster too, slots of the key's hash tag are read (here, the process has
// gone: its record and queue entry are dropped and the waiter here is
// served), and a record naming another hash tag is ignored rather than
// failing the script halfway.
func TestRedisWithRecordOutsideKeys(t *testing.T) {
	t.Parallel() // keys of its own
	for _, tc := range []struct {
		name string
		rdb  func(testing.TB) redis.UniversalClient
		tag  string // of the recorded slot
	}{
		{"Single", redistest.Single, "{c}"},
		{"Cluster", redistest.Cluster, "{c}"},
		{"Cluster other tag", redistest.Cluster, "{other}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := withBackend(t, tc.rdb(t))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r := Request{Key: "{c}/api", Concurrency: 1, TTL: time.Minute,
				With: []Request{{Key: "{c}@lock", Concurrency: 1, TTL: time.Minute}}}
			api := mustTake(t, b, r.withless())
			waiter := acquireAsync(ctx, b, r)
			headRefused(t, b, r.Key)
			k, slot := b.names(r.Key, nil), b.names(tc.tag+"@other", nil)
			if err := b.rdb.ZAdd(ctx, k.waiting, redis.Z{Score: 0, Member: "gone"}).Err(); err != nil {
				t.Fatal(err)
			}
			rec := recordOf(slot.holders, slot.cooldown, "1", "60000", tc.tag+"@other")
			if err := b.rdb.HSet(ctx, k.records, "gone", rec).Err(); err != nil {
				t.Fatal(err)
			}
			if err := b.Release(ctx, api); err != nil {
				t.Fatalf("release: %v", err)
			}
			got := <-waiter
			if got.err != nil || len(got.l.With) != 1 {
				t.Fatalf("waiter: %+v, %v", got.l, got.err)
			}
			if ps := waitingProcs(t, b, r.Key); slices.Contains(ps, "gone") {
				t.Errorf("the process gone is still queued: %v", ps)
			}
			if n, err := b.rdb.HExists(ctx, k.records, "gone").Result(); err != nil || n {
				t.Errorf("the record of the process gone is left (%v)", err)
			}
			if err := b.Release(ctx, got.l); err != nil {
				t.Fatal(err)
			}
			noHolders(t, b, r.Key, "{c}@lock", tc.tag+"@other")
		})
	}
}

// recordOf encodes fields as a record does (see Redis.record).
func recordOf(fields ...string) string {
	var sb strings.Builder
	for _, f := range fields {
		sb.WriteString(strconv.Itoa(len(f)) + ":" + f)
	}
	return sb.String()
}
