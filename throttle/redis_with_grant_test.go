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
